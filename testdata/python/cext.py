# A Python function that spends its time in C extensions (hashlib, zlib),
# for gprof's test that native frames show under the Python frame calling
# them.
import hashlib
import sys
import time
import zlib

DATA = bytes(range(256)) * 4096


def digest():
    return hashlib.sha256(DATA).digest()


def squeeze():
    return zlib.compress(DATA, 6)


def main(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        digest()
        squeeze()


if __name__ == "__main__":
    main(float(sys.argv[1]))
