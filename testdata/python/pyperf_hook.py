"""A benchmark driven the way pyperf's perf_record hook drives perf.

Usage: pyperf_hook.py PROFILER OUTPUT

The hook (pyperf/_hooks.py, class perf_record) makes a temporary
directory with two FIFOs, ctl_fifo and ack_fifo, and starts

    PROFILER record --pid PID --output OUTPUT --control fifo:CTL,ACK \
        $PYPERF_PERF_RECORD_EXTRA_OPTS

with its output thrown away; it opens the control FIFO for writing and the
ack FIFO for reading, and around each measured stretch writes "enable" and
"disable", one a line, flushing, and reads one line of ack after each; at
teardown it writes "stop", reads the ack, and waits for the profiler.
This script does the same, in its own words, for any PROFILER (perf or
gprof), around a benchmark whose phases are known: each phase burns a
given amount of this thread's own CPU time in a function of its own.
Sampling is on from the start (the hook passes no -D), so phase_before is
sampled; phase_measured is, three times; phase_between and phase_after
are not.

It prints each phase's bounds on the monotonic clock and CPU time,
"phase NAME START END CPU_S", so that a test can count the samples inside
each, and the profiler's exit status last.
"""

import os
import shlex
import subprocess
import sys
import tempfile
import time


def burn(seconds):
    # This thread's own CPU time, checked every few thousand steps so that
    # the clock's system calls stay a small part of the work.
    end = time.thread_time() + seconds
    x = 0
    while True:
        for _ in range(5000):
            x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        if time.thread_time() >= end:
            return x


def phase_before(s):
    return burn(s)


def phase_measured(s):
    return burn(s)


def phase_between(s):
    return burn(s)


def phase_after(s):
    return burn(s)


class Hook:
    def __init__(self, profiler, output):
        self.dir = tempfile.TemporaryDirectory()
        self.ctl_path = os.path.join(self.dir.name, "ctl_fifo")
        self.ack_path = os.path.join(self.dir.name, "ack_fifo")
        os.mkfifo(self.ctl_path)
        os.mkfifo(self.ack_path)
        args = profiler + ["record", "--pid", str(os.getpid()), "--output", output,
                           "--control", "fifo:%s,%s" % (self.ctl_path, self.ack_path)]
        args += shlex.split(os.environ.get("PYPERF_PERF_RECORD_EXTRA_OPTS", ""))
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ctl = open(self.ctl_path, "w")
        self.ack = open(self.ack_path, "r")

    def command(self, word):
        self.ctl.write(word + "\n")
        self.ctl.flush()
        return self.ack.readline()

    def __enter__(self):
        self.command("enable")

    def __exit__(self, *exc):
        self.command("disable")

    def teardown(self):
        try:
            self.command("stop")
            return self.proc.wait(timeout=120)
        finally:
            self.ctl.close()
            self.ack.close()


def timed(name, fn, seconds):
    t0, c0 = time.monotonic(), time.thread_time()
    fn(seconds)
    print("phase %s %.9f %.9f %.6f" % (name, t0, time.monotonic(), time.thread_time() - c0), flush=True)


def main():
    profiler, output = shlex.split(sys.argv[1]), sys.argv[2]
    hook = Hook(profiler, output)
    # Let the profiler attach before the work starts, as a benchmark's
    # warm-up would.
    time.sleep(1.0)
    timed("before", phase_before, 0.4)
    for i in range(3):
        if i:
            timed("between", phase_between, 0.3)
        with hook:
            timed("measured", phase_measured, 0.5)
    timed("after", phase_after, 0.4)
    print("exit", hook.teardown(), flush=True)


main()
