# A known CPU split for gprof's Python tests: main calls a, b and c, whose
# bodies are the same loop, run 5:3:2 times, until the process has used
# the CPU seconds given as the first argument. With a second argument it
# prints "ready" and waits for SIGUSR1 first (for tests that attach).
import os
import signal
import sys
import time


def a():
    s = 0
    for i in range(2000000):
        s += i * i
    return s


def b():
    s = 0
    for i in range(1200000):
        s += i * i
    return s


def c():
    s = 0
    for i in range(800000):
        s += i * i
    return s


def main(seconds):
    # The truth: each function's CPU time, by the process's own clock
    # around every call (the work per iteration is alike, but on a loaded
    # machine not exactly).
    spent = {"a": 0.0, "b": 0.0, "c": 0.0}
    end = time.process_time() + seconds
    while time.process_time() < end:
        for name, fn in (("a", a), ("b", b), ("c", c)):
            t0 = time.process_time()
            fn()
            spent[name] += time.process_time() - t0
    total = sum(spent.values())
    print("truth a %.2f b %.2f c %.2f" % tuple(100 * spent[k] / total for k in "abc"), flush=True)
    # Its own CPU time, as the C fixtures print it, for bench/run to take
    # away from the profiler's. (Below a, b and c: the tests know their
    # lines.)
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    print("rusage_ns %d" % int((ru.ru_utime + ru.ru_stime) * 1e9), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 2:
        signal.signal(signal.SIGUSR1, lambda *_: None)
        print("ready", flush=True)
        signal.pause()
    main(float(sys.argv[1]))
