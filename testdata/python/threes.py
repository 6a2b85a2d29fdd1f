# Three threads, as a newcomer's first Python program might have them:
# hasher (hashlib's C code), jsoner (json's C code, called from a Python
# loop) and spinner (pure Python), each until it has used the CPU seconds
# given as the first argument (time.thread_time, so that the split holds
# on a loaded machine). A second argument "new" is the changed program of
# gprof's diff tests: jsoner encodes a bigger object (more of its time in
# json's C code) while hasher and spinner stop at a fifth of their budget,
# so that jsoner's total share grows while its own self share shrinks.
import hashlib
import json
import sys
import threading
import time

NEW = len(sys.argv) > 2 and sys.argv[2] == "new"


def until(seconds, step):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        step()


def hasher(seconds):
    if NEW:
        seconds /= 5
    d = b"x" * 4096
    until(seconds, lambda: hashlib.sha256(d).digest())


def jsoner(seconds):
    o = {"a": list(range(2000 if NEW else 20)), "b": {"c": "d" * 20}}
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        json.loads(json.dumps(o))


def spinner(seconds):
    if NEW:
        seconds /= 5
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        for _ in range(1000):
            n += 1


def main(seconds):
    ts = [threading.Thread(target=f, args=(seconds,), name=f.__name__) for f in (hasher, jsoner, spinner)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


if __name__ == "__main__":
    main(float(sys.argv[1]))
