"""The REPL server run by an ordinary user (not root): the hostile-cell battery finds no way out.

A real server runs as a test uid under the system interpreter (see ``unprivileged.py``); its
workers get user, PID, mount, IPC and network namespaces from bubblewrap.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from openenv.envs.repl.client import REPLEnv
from tests._require import require
from tests.envs.repl import unprivileged as unpriv
from tests.envs.repl.conftest import pid_gone

SECRET = "hf_unprivileged_server_secret_4711"
LIMITS = {
    "OPENENV_REPL_CELL_TIMEOUT_S": "3",
    "OPENENV_REPL_INTERRUPT_GRACE_S": "1",
    "OPENENV_REPL_MEMORY_MB": "512",
    "OPENENV_REPL_MAX_PROCESSES": "24",
    "OPENENV_REPL_WARM_WORKERS": "1",
}
SECRETS = {"HF_TOKEN": SECRET, "OPENENV_REPL_LLM_API_KEY": SECRET + "-llm"}
VISIBLE_PIDS = "import os\nsorted(int(p) for p in os.listdir('/proc') if p.isdigit())"


@pytest.fixture(scope="module")
def served() -> Iterator[unpriv.Served]:
    require(unpriv.can_run_unprivileged(), "root (to drop to a test uid), setpriv and /usr/bin/python3 with venv")
    with unpriv.unprivileged_server({**LIMITS, **SECRETS}) as server:
        yield server


def _cell(env, code: str):
    return env.execute(code).observation


def _healthy(url: str) -> bool:
    return httpx.get(f"{url}/health", timeout=10).status_code == 200


def _same_uid_process(uid: int) -> subprocess.Popen[bytes]:
    """A plain process of the server's user, outside any sandbox (the user's 'other program')."""
    return subprocess.Popen([unpriv.SETPRIV or "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                             "sleep", "300"], stdin=subprocess.DEVNULL)


def _status_uid(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        line = next(x for x in f if x.startswith("Uid:"))
    return int(line.split()[1])


def test_the_server_is_unprivileged_and_reports_user_namespaces(served: unpriv.Served) -> None:
    assert _status_uid(served.proc.pid) == served.uid != 0
    health = httpx.get(f"{served.url}/health", timeout=10).json()
    assert health["isolation"] == "user-namespaces"
    meta = httpx.get(f"{served.url}/metadata", timeout=10).json()
    assert meta["isolation"] == "user-namespaces" and meta["warm_workers"] == 1
    with REPLEnv(base_url=served.url).sync() as env:
        env.reset()
        ids = _cell(env, "import os, socket\n(os.getuid(), os.getpid(), socket.gethostname())").result.stdout
        assert ids.strip() == f"({served.uid}, 2, 'repl')"  # its own PID namespace and hostname


def test_the_servers_environment_is_unreadable_even_to_its_own_user(served: unpriv.Served) -> None:
    sleeper = _same_uid_process(served.uid)
    try:
        out = subprocess.run([unpriv.SETPRIV or "setpriv", f"--reuid={served.uid}", f"--regid={served.uid}",
                              "--clear-groups", "cat", f"/proc/{served.proc.pid}/environ"],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode != 0 and SECRET not in out.stdout  # non-dumpable: not even the same uid
    finally:
        sleeper.kill()
        sleeper.wait()


def test_secrets_in_the_servers_environment_are_unreadable_from_a_cell(served: unpriv.Served) -> None:
    probe = (
        "import os\nfound, pids = [], [p for p in os.listdir('/proc') if p.isdigit()]\n"
        "for p in pids:\n"
        "    for name in ('environ', 'cmdline', 'mem'):\n"
        "        try:\n            data = open(f'/proc/{p}/{name}', 'rb').read(1 << 20)\n"
        "        except OSError:\n            continue\n"
        f"        if {SECRET[:12]!r}.encode() in data:\n            found.append((p, name))\n"
        f"print(found, len(pids), {SECRET[:12]!r} in repr(dict(os.environ)))\n"
        f"print(os.path.exists('/proc/{served.proc.pid}/environ'))"
    )
    with REPLEnv(base_url=served.url).sync() as env:
        env.reset()
        out = _cell(env, probe).result.stdout.splitlines()
        assert out[0].startswith("[] ") and out[0].endswith(" False")
        assert int(out[0].split()[1]) <= 3  # bubblewrap's init, the worker, nothing of the host
        pids = eval(_cell(env, VISIBLE_PIDS).result.stdout)  # noqa: S307 - a list of ints from our worker
        assert pids[:2] == [1, 2] and len(pids) <= 3


def test_the_server_other_sessions_and_other_processes_are_unkillable(served: unpriv.Served) -> None:
    sleeper = _same_uid_process(served.uid)
    try:
        with REPLEnv(base_url=served.url).sync() as a, REPLEnv(base_url=served.url).sync() as b:
            a.reset()
            b.reset()
            assert _cell(a, "x = 41\nx + 1").result.stdout == "42\n"
            assert _cell(b, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n'still here'").result.success
            killed = _cell(b, "import os, signal\nos.kill(-1, signal.SIGKILL)")  # nothing else to signal in here
            assert "ProcessLookupError" in (killed.result.exception or ""), killed.result.exception
            every = "import os\nfor p in [int(p) for p in os.listdir('/proc') if p.isdigit()]:\n    os.kill(p, 9)"
            assert _cell(b, every).outcome == "worker_died"  # it killed itself, and only itself
            assert _cell(b, "'b again'").result.stdout == "'b again'\n"
            assert _cell(a, "x").result.stdout == "41\n"
        assert _healthy(served.url) and served.proc.poll() is None
        assert sleeper.poll() is None  # the user's other program survived every kill
    finally:
        sleeper.kill()
        sleeper.wait()


def test_another_sessions_memory_files_and_variables_are_unreachable(served: unpriv.Served) -> None:
    with REPLEnv(base_url=served.url).sync() as a, REPLEnv(base_url=served.url).sync() as b:
        a.reset()
        b.reset()
        write = ("secret = 'session-a-secret'\nopen('mine.txt', 'w').write(secret)\n"
                 "open('/tmp/a-tmp.txt', 'w').write(secret)\nopen('/dev/shm/a-shm', 'w').write(secret)")
        assert _cell(a, write).result.success
        look = (
            "import os, gc\n"
            "print(os.listdir('.'), os.listdir('/tmp'), os.listdir('/dev/shm'), sorted(os.listdir('/')))\n"
            "print(any('session-a-secret' in o for o in gc.get_objects() if isinstance(o, str)))"
        )
        out = _cell(b, look).result.stdout.splitlines()
        assert out[0].startswith("[] [] [] ") and out[1] == "False"
        top = eval(out[0].split("] ", 3)[3])  # noqa: S307 - our worker's repr of a list of names
        assert set(top) <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "opt", "proc", "sbin", "session",
                            "tmp", "usr", "var"}
        assert "NameError" in _cell(b, "secret").result.exception
        assert _cell(a, "open('mine.txt').read()").result.stdout == "'session-a-secret'\n"


def test_sysv_ipc_is_private_to_each_sandbox(served: unpriv.Served) -> None:
    shm = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    with REPLEnv(base_url=served.url).sync() as a, REPLEnv(base_url=served.url).sync() as b:
        a.reset()
        b.reset()
        assert _cell(a, shm + "libc.shmget(0x5eed, 4096, 0o1600) >= 0").result.stdout.strip().endswith("True")
        assert _cell(b, shm + "(libc.shmget(0x5eed, 0, 0), ctypes.get_errno())").result.stdout == "(-1, 2)\n"


def test_nothing_of_the_project_or_home_is_visible_and_system_dirs_are_read_only(served: unpriv.Served) -> None:
    repo = str(unpriv.REPO)
    checks = (
        f"import os\nprint([os.path.exists(p) for p in ({repo!r}, '/root', '/home', {sys.prefix!r})])\n"
        "for p in ('/usr/evil', '/etc/evil', '/opt/openenv-repl/evil.py'):\n"
        "    try:\n        open(p, 'w')\n    except OSError as e:\n        print(type(e).__name__)\n"
    )
    with REPLEnv(base_url=served.url).sync() as env:
        env.reset()
        out = _cell(env, checks).result.stdout.splitlines()
        assert out[0] == "[False, False, False, False]"
        assert len(out) == 4 and all(line in ("OSError", "PermissionError") for line in out[1:])


def test_network_is_off(served: unpriv.Served) -> None:
    port = served.url.rsplit(":", 1)[1]
    with REPLEnv(base_url=served.url).sync() as env:
        env.reset()
        obs = _cell(env, f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)")
        assert not obs.result.success and "Error" in (obs.result.exception or "")


def test_fork_bomb_memory_bomb_and_hung_c_call_are_contained(served: unpriv.Served) -> None:
    spawn = (
        "import subprocess\nprocs = []\n"
        "try:\n    for _ in range(200):\n        procs.append(subprocess.Popen(['sleep', '30']))\n"
        "finally:\n    started = len(procs)\n    [p.kill() for p in procs]\n    [p.wait() for p in procs]\n"
    )
    with REPLEnv(base_url=served.url).sync() as env, REPLEnv(base_url=served.url).sync() as other:
        env.reset()
        other.reset()
        _cell(other, "kept = 'other session'")
        obs = _cell(env, spawn)
        assert "BlockingIOError" in (obs.result.exception or "")
        assert int(_cell(env, "started").result.stdout) <= 24  # RLIMIT_NPROC counted in this session's namespace
        bomb = _cell(env, "import os\nwhile True:\n    os.fork()")
        assert bomb.outcome in ("error", "timeout", "worker_died")
        assert len(unpriv.pids_of(served.uid)) < 80  # the host did not fill up with the bomb's processes
        assert env.execute("'x' * 10**10").observation.outcome == "memory"
        began = time.monotonic()
        hung = _cell(env, "sum(range(10**12))")
        assert hung.outcome == "timeout" and hung.namespace_lost and time.monotonic() - began < 30
        assert _cell(env, "'after'").result.stdout == "'after'\n"
        assert _cell(other, "kept").result.stdout == "'other session'\n"
    assert _healthy(served.url)


def test_a_reset_takes_a_fresh_worker_never_a_used_one(served: unpriv.Served) -> None:
    with REPLEnv(base_url=served.url).sync() as env:
        env.reset()
        _cell(env, "import os\nleft = 1\nopen('/tmp/left', 'w').write('x')\nopen('here', 'w').write('x')")
        for _ in range(3):
            env.reset()
            out = _cell(env, "import os\n(os.listdir('.'), os.listdir('/tmp'), 'left' in dir())").result.stdout
            assert out == "([], [], False)\n"


def _sleepers(uid: int, marker: str) -> list[int]:
    found = []
    for pid in unpriv.pids_of(uid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                    found.append(pid)
        except OSError:
            continue
    return found


def test_session_end_kills_processes_that_left_the_process_group(served: unpriv.Served) -> None:
    with REPLEnv(base_url=served.url).sync() as env:
        env.reset()
        escape = "import subprocess\nsubprocess.Popen(['sleep', '311'], start_new_session=True).pid > 0"
        assert _cell(env, escape).result.stdout == "True\n"
        deadline = time.monotonic() + 5  # /proc can show it a moment late on a loaded machine
        while not (escaped := _sleepers(served.uid, "311")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(escaped) == 1
    assert all(pid_gone(p, within_s=15) for p in escaped)


def test_workers_die_with_a_killed_server() -> None:
    require(unpriv.can_run_unprivileged(), "root (to drop to a test uid), setpriv and /usr/bin/python3 with venv")
    uid = unpriv.server_uid(1)
    with unpriv.unprivileged_server(LIMITS, uid=uid) as server:
        with REPLEnv(base_url=server.url).sync() as env:
            env.reset()
            _cell(env, "import subprocess\nsubprocess.Popen(['sleep', '300'], start_new_session=True)")
            workers = [p for p in unpriv.pids_of(uid) if p != server.proc.pid]
            assert len(workers) >= 4  # bubblewrap, its init, the worker, its child (+ warm workers)
            server.proc.kill()
            server.proc.wait(timeout=10)
            assert all(pid_gone(p) for p in workers)


IMPORT_APP = "import openenv.envs.repl.app as a; print('isolation', a.ISOLATION)"
SERVE = "import sys; from openenv.cli.main import main; sys.argv = ['openenv', 'serve', 'repl', '--port', '0']; main()"


def _import_app(uid: int, extra: dict[str, str], *, no_nested_userns: bool = False,
                code: str = IMPORT_APP) -> subprocess.CompletedProcess[str]:
    argv = unpriv.unprivileged_command(uid, "-c", code)
    with unpriv.unprivileged_home(uid) as (pkg, home):
        env = unpriv.unprivileged_env(pkg, home, extra)
        if no_nested_userns:
            argv = [sys.executable, "-c", NO_USERNS_LAUNCHER, *argv]
        return subprocess.run(argv, env=env, cwd=home, capture_output=True, text=True, timeout=60)


NO_USERNS_LAUNCHER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
go_r, go_w = os.pipe()
ready_r, ready_w = os.pipe()
pid = os.fork()
if pid == 0:
    if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
        os._exit(97)
    os.write(ready_w, b"u")
    os.read(go_r, 1)
    with open("/proc/sys/user/max_user_namespaces", "w") as f:  # this namespace may create none
        f.write("0")
    os.execvp(sys.argv[1], sys.argv[1:])
os.read(ready_r, 1)
for name in ("uid_map", "gid_map"):
    with open(f"/proc/{pid}/{name}", "w") as f:
        f.write("0 0 1000000\n")
os.write(go_w, b"g")
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_serve_refuses_to_start_where_the_kernel_refuses_user_namespaces() -> None:
    require(unpriv.can_run_unprivileged(), "root (to drop to a test uid), setpriv and /usr/bin/python3 with venv")
    uid = unpriv.server_uid(1)
    refused = _import_app(uid, {}, no_nested_userns=True)
    assert refused.returncode == 1, refused.stderr
    assert "refusing to start" in refused.stderr and "user.max_user_namespaces = 0" in refused.stderr
    assert "OPENENV_REPL_ALLOW_WEAK_ISOLATION=1" in refused.stderr and "Traceback" not in refused.stderr
    served = _import_app(uid, {}, no_nested_userns=True, code=SERVE)  # what a user types: openenv serve repl
    assert served.returncode == 1 and served.stderr.startswith("openenv serve repl: refusing to start:"), served.stderr
    allowed = _import_app(uid, {"OPENENV_REPL_ALLOW_WEAK_ISOLATION": "1"}, no_nested_userns=True)
    assert allowed.returncode == 0 and allowed.stdout.strip() == "isolation weak", allowed.stderr
    fine = _import_app(uid, {})
    assert fine.returncode == 0 and fine.stdout.strip() == "isolation user-namespaces", fine.stderr


def test_serve_refuses_without_bubblewrap() -> None:
    require(unpriv.can_run_unprivileged(), "root (to drop to a test uid), setpriv and /usr/bin/python3 with venv")
    out = _import_app(unpriv.server_uid(1), {"OPENENV_REPL_BWRAP": "/nonexistent/bwrap"})
    assert out.returncode == 1 and "refusing to start" in out.stderr and "Traceback" not in out.stderr
