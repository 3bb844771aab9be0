"""Runs one env server and takes its whole process group down when the parent goes away.

Started as a script (stdlib only, so it starts fast) by ``LocalProcessProvider`` in a new session:
``python _supervisor.py WATCH_FD [--cwd DIR] -- CMD...``. End of file on ``WATCH_FD`` (-1: none) means the
parent died; SIGTERM means a normal stop. Either way the group gets SIGTERM, then SIGKILL after a
grace period. When the server exits by itself, its exit code is passed on.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys

GRACE_S = 5.0


def _end_group(child: subprocess.Popen[bytes]) -> int:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(os.getpgrp(), signal.SIGTERM)
    try:
        code = child.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        code = -signal.SIGKILL
    os.killpg(os.getpgrp(), signal.SIGKILL)  # ends this process too, and any stragglers
    return code


def main(argv: list[str]) -> int:
    watch_fd, rest = int(argv[1]), argv[2:]
    if rest[:1] == ["--cwd"]:
        os.chdir(rest[1])
        rest = rest[2:]
    cmd = rest[1:]  # after "--"
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGCHLD, lambda *_: None)
    child = subprocess.Popen(cmd)
    watched = [wake_r] + ([watch_fd] if watch_fd >= 0 else [])
    while True:
        code = child.poll()
        if code is not None:
            return code
        if stopping:
            return _end_group(child)
        ready, _, _ = select.select(watched, [], [], 1.0)
        if wake_r in ready:
            os.read(wake_r, 512)
        if watch_fd in ready and not os.read(watch_fd, 1):
            return _end_group(child)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
