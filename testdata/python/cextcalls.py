# Python functions whose time is in C extensions they call (issue 26's
# program): hasher() loops hashlib.sha256(...).digest(), jsoner() loops
# json.loads(json.dumps(...)), each for the same CPU time of its own
# thread, one after the other or ("threads") in two threads at once. A
# profiler must show each sample's native frames under the Python calls
# running at that sample: sha256 under hasher, json's C encoder under
# dumps, its C scanner under loads.
import hashlib
import json
import sys
import threading
import time

DATA = b"x" * 65536
OBJ = {"a": list(range(200)), "b": {"c": "d" * 50, "e": [1.5, 2.5] * 20}}


def hasher(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        hashlib.sha256(DATA).digest()


def jsoner(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        json.loads(json.dumps(OBJ))


def main():
    seconds = float(sys.argv[1])
    if sys.argv[2:] == ["threads"]:
        threads = [threading.Thread(target=f, args=(seconds,)) for f in (hasher, jsoner)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        hasher(seconds)
        jsoner(seconds)


if __name__ == "__main__":
    main()
