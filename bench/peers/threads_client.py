"""``python threads_client.py URL THREADS SECONDS``: the training-script pattern, one sync client per
thread stepping an echo env; prints ``{"steps", "seconds", "cpu_s"}``. Runs with ours or 0.10's."""

import json
import sys
import threading
import time

from openenv.core import GenericEnvClient

url, threads, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
ready = threading.Barrier(threads + 1)
counts = [0] * threads
stop = [0.0]


def worker(i):
    with GenericEnvClient(base_url=url) as env:
        env.reset()
        ready.wait(timeout=120)
        n, action = 0, {"message": f"thread {i}"}
        while time.monotonic() < stop[0] and n < 10_000_000:
            env.step(action)
            n += 1
        counts[i] = n


pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
for t in pool:
    t.start()
stop[0] = time.monotonic() + 3600
ready.wait(timeout=120)
began, cpu = time.monotonic(), time.process_time()
stop[0] = began + seconds
for t in pool:
    t.join(timeout=seconds + 120)
print(json.dumps({"steps": sum(counts), "seconds": time.monotonic() - began, "cpu_s": time.process_time() - cpu}))
