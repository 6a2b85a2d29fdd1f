"""hang: a Python program that hangs, for gprof dump.

The main thread waits for a thread that waits for a lock the main thread
holds; another sleeps forever; another spins. It prints "ready" once they
all run. Each line a thread hangs on says so.
"""
import threading
import time

lock = threading.Lock()
lock.acquire()
running = threading.Barrier(4)


def wait_for_lock():
    running.wait()
    lock.acquire()  # hangs here: wait_for_lock


def sleep_forever():
    running.wait()
    while True:
        time.sleep(100)  # hangs here: sleep_forever


def spin():
    running.wait()
    x = 0
    while True:
        x += 1  # spins here: spin


def main():
    threads = [threading.Thread(target=f, daemon=f is spin) for f in (wait_for_lock, sleep_forever, spin)]
    for t in threads:
        t.start()
    running.wait()
    time.sleep(0.05)
    print("ready", flush=True)
    threads[0].join()  # hangs here: main


main()
