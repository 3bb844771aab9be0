"""No path from a cell to the server or to another session: objects, /proc, signals, ptrace, files."""

from __future__ import annotations

import os
import time

import pytest

from openenv.envs.repl.identity import is_root
from tests._require import require
from tests.envs.repl.conftest import pid_gone, run, test_limits

SECRET = "s3cret-of-session-a"


def _pid(env) -> int:
    return int(run(env, "import os\nos.getpid()").result.stdout)


def test_namespace_lives_outside_the_server(make_env) -> None:
    env = make_env()
    assert _pid(env) != os.getpid()


def test_object_walks_through_helpers_find_nothing_of_the_server(make_env, monkeypatch) -> None:
    monkeypatch.setenv("OPENENV_TEST_SERVER_SECRET", "hunter2-server-secret")
    a = make_env()
    run(a, f"secret = {SECRET!r}")
    b = make_env()
    walk = (
        "import gc, sys\n"
        "found = [o for o in gc.get_objects() if isinstance(o, dict) for v in o.values()\n"
        f"         if isinstance(v, str) and ({SECRET!r} in v or 'hunter2' in v)]\n"
        "texts = ['{0.__globals__}'.format(f) for f in (FINAL, FINAL_VAR, llm_query)]\n"
        "texts += [repr(vars(FINAL.__self__)), repr(sys.modules)]\n"
        f"print(len(found), any({SECRET!r} in t or 'hunter2' in t for t in texts))"
    )
    assert run(b, walk).result.stdout == "0 False\n"


def test_other_sessions_cannot_be_reached_through_proc_signals_or_ptrace(make_env) -> None:
    require(is_root(), "root, so that each session has its own uid")
    a, b = make_env(), make_env()
    run(a, f"secret = {SECRET!r}")
    pid_a, server = _pid(a), os.getpid()
    probes = {
        "environ": f"open('/proc/{pid_a}/environ').read()",
        "mem": f"open('/proc/{pid_a}/mem', 'rb').read(1)",
        "server_environ": f"open('/proc/{server}/environ').read()",
        "signal": f"import os, signal\nos.kill({pid_a}, signal.SIGKILL)",
        "signal_server": f"import os, signal\nos.kill({server}, signal.SIGTERM)",
        "cwd": f"import os\nos.listdir('/proc/{pid_a}/cwd')",
    }
    for name, code in probes.items():
        obs = run(b, code)
        assert not obs.result.success, name
        assert "PermissionError" in obs.result.exception, (name, obs.result.exception)
    ptrace = (
        "import ctypes, ctypes.util\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        f"(libc.ptrace(16, {pid_a}, 0, 0), ctypes.get_errno())"
    )
    assert run(b, ptrace).result.stdout == "(-1, 1)\n"  # PTRACE_ATTACH -> EPERM
    assert run(a, "secret").result.stdout == f"{SECRET!r}\n"


def test_closing_kills_the_worker_and_everything_it_started(make_env) -> None:
    env = make_env()
    pid = _pid(env)
    child = run(env, "import subprocess\nsubprocess.Popen(['sleep', '300']).pid").result.stdout
    escaped = run(env, "import subprocess\nsubprocess.Popen(['sleep', '300'], start_new_session=True).pid")
    pids = [pid, int(child)]
    if is_root():  # only a per-session uid reaches a process that left the process group
        pids.append(int(escaped.result.stdout))
    env.close()
    assert all(pid_gone(p) for p in pids)


def test_reset_starts_a_fresh_worker(make_env) -> None:
    env = make_env()
    run(env, "old = 1")
    pid = _pid(env)
    run(env, "open('left-behind.txt', 'w').write('x')")
    env.reset()
    assert pid_gone(pid)
    assert "NameError" in run(env, "old").result.exception
    assert run(env, "import os\nos.listdir('.')").result.stdout == "[]\n"


def test_a_crashed_holders_processes_die_before_its_uid_is_reused(monkeypatch) -> None:
    import subprocess

    from openenv.envs.repl import identity

    require(is_root(), "root, for per-session uids")
    monkeypatch.setattr(identity, "UID_BASE", 470000 + os.getpid() % 10000)
    monkeypatch.setattr(identity, "UID_COUNT", 1)
    first = identity.acquire_identity()
    leftover = subprocess.Popen(["sleep", "300"], user=first.uid, group=first.gid, extra_groups=[])
    try:
        os.close(first._lock_fd)  # the holder "crashes": the lock goes, the busy mark stays
        second = identity.acquire_identity()
        assert second.uid == first.uid
        assert leftover.wait(timeout=10) == -9
        second.release()
        third = identity.acquire_identity()  # released cleanly: nothing to kill, still reusable
        third.release()
    finally:
        leftover.kill()
        leftover.wait()


def test_uids_released_together_are_scrubbed_in_one_walk_and_reusable(monkeypatch) -> None:
    from openenv.envs.repl import identity, pool

    require(is_root(), "root, for per-session uids")
    monkeypatch.setattr(identity, "UID_BASE", 460000 + os.getpid() % 10000)
    monkeypatch.setattr(identity, "UID_COUNT", 3)
    held = [identity.acquire_identity() for _ in range(3)]
    paths = [f"/tmp/openenv-repl-test-batch-{os.getpid()}-{i}" for i in range(3)]
    for ident, path in zip(held, paths, strict=True):
        with open(path, "w") as f:
            f.write("left behind")
        os.chown(path, ident.uid, ident.gid)
    walks: list[tuple[int, ...]] = []
    scrub = identity.scrub_uid_files
    monkeypatch.setattr(identity, "scrub_uid_files", lambda *uids: (walks.append(uids), scrub(*uids)))
    for ident in held:
        pool._to_release.append(ident)
    pool._release_waiting()
    assert walks == [tuple(ident.uid for ident in held)]
    assert not any(os.path.exists(p) for p in paths)
    again = [identity.acquire_identity(wait_s=0) for _ in range(3)]  # all three free again
    identity.release_all(again)


def test_a_failed_scrub_leaves_the_uid_marked_busy_not_lost(monkeypatch) -> None:
    from openenv.envs.repl import identity

    require(is_root(), "root, for per-session uids")
    monkeypatch.setattr(identity, "UID_BASE", 450000 + os.getpid() % 10000)
    monkeypatch.setattr(identity, "UID_COUNT", 1)
    first = identity.acquire_identity()
    path = f"/tmp/openenv-repl-test-unscrubbed-{os.getpid()}"
    with open(path, "w") as f:
        f.write("left behind")
    os.chown(path, first.uid, first.gid)
    scrub = identity.scrub_uid_files

    def failing(*uids: int) -> None:
        raise RuntimeError("the walk failed")

    monkeypatch.setattr(identity, "scrub_uid_files", failing)
    with pytest.raises(RuntimeError):
        first.release()
    monkeypatch.setattr(identity, "scrub_uid_files", scrub)
    second = identity.acquire_identity(wait_s=0)  # the uid is free, and scrubbed before it is handed out
    try:
        assert second.uid == first.uid
        assert not os.path.exists(path)
    finally:
        second.release()


def test_worker_code_on_disk_is_read_only_to_cells(make_env) -> None:
    require(is_root(), "root, so that workers run as a uid that does not own the worker code")
    env = make_env()
    code = "import os, worker_support\nlib = os.path.dirname(worker_support.__file__)\nopen(os.path.join(lib, 'worker.py'), 'a')"
    assert "PermissionError" in run(env, code).result.exception
    assert "PermissionError" in run(env, "import os\nopen(os.path.join(lib, 'evil.py'), 'w')").result.exception


def test_workers_die_with_a_killed_server() -> None:
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from openenv.envs.repl import identity, launch

    require(bool(launch.SETPRIV) and launch._setpriv_has_pdeathsig(), "util-linux setpriv with --pdeathsig")
    script = (
        "import os, threading, time\n"
        "from openenv.envs.repl import REPLAction, REPLEnvironment\n"
        "env = REPLEnvironment()\nenv.reset()\n"
        "print(env.step(REPLAction(code='import os\\nos.getpid()')).result.stdout.strip(), os.getpid(), flush=True)\n"
        "threading.Thread(target=env.step, args=(REPLAction(code='while True: pass'),), daemon=True).start()\n"
        "time.sleep(0.5)\nos.kill(os.getpid(), 9)\n"
    )
    repo = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=repo)
    assert out.returncode == -9
    worker_pid, server_pid = (int(v) for v in out.stdout.split())
    assert pid_gone(worker_pid)
    orphans = [e.path for e in os.scandir(tempfile.gettempdir()) if _owned_by(e.path, server_pid)]
    assert orphans, "the killed server left no parent directory (nothing to clean up?)"
    fresh = identity.Workdirs()  # the next server start removes what the dead one left
    try:
        assert not any(os.path.exists(p) for p in orphans)
    finally:
        fresh.remove(fresh.root)


def _owned_by(path: str, pid: int) -> bool:
    try:
        with open(os.path.join(path, "owner")) as f:
            return f.read().strip() == str(pid)
    except OSError:
        return False


def test_files_left_in_shared_temp_dirs_are_gone_before_the_uid_is_reused(make_env, monkeypatch) -> None:
    from openenv.envs.repl import identity

    require(is_root(), "root, for per-session uids")
    monkeypatch.setattr(identity, "UID_BASE", 480000 + os.getpid() % 10000)
    monkeypatch.setattr(identity, "UID_COUNT", 1)
    limits = test_limits(warm_workers=0)  # one uid: none to spare for warm workers
    a = make_env(limits=limits)
    path = f"/tmp/openenv-repl-test-leak-{os.getpid()}"
    run(a, f"open({path!r}, 'w').write('secret of a')\nimport os\nos.makedirs({path!r} + '.d/x')")
    uid = a._sandbox.ident.uid
    assert os.stat(path).st_uid == uid
    a.close()
    deadline = time.monotonic() + 30
    while (os.path.exists(path) or os.path.exists(path + ".d")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(path) and not os.path.exists(path + ".d")
    b = make_env(limits=limits)  # the pool has one uid: b gets a's uid back
    assert b._sandbox.ident.uid == uid


def test_sysv_ipc_objects_do_not_outlive_the_session(make_env, monkeypatch) -> None:
    from openenv.envs.repl import identity

    require(is_root(), "root, for per-session uids and IPC namespaces")
    monkeypatch.setattr(identity, "UID_BASE", 490000 + os.getpid() % 10000)
    monkeypatch.setattr(identity, "UID_COUNT", 1)
    shmget = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    limits = test_limits(warm_workers=0)  # one uid: none to spare for warm workers
    a = make_env(limits=limits)
    made = run(a, shmget + "libc.shmget(0x5eed, 4096, 0o1600) >= 0")  # IPC_CREAT | 0600
    assert made.result.stdout.strip().endswith("True")
    a.close()
    b = make_env(limits=limits)  # same uid as a (the pool has one)
    found = run(b, shmget + "(libc.shmget(0x5eed, 0, 0), ctypes.get_errno())")
    assert found.result.stdout == "(-1, 2)\n"  # ENOENT: a's segment died with a's IPC namespace
