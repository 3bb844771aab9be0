"""Every limit of the REPL worker, each with a cell that would get through without it."""

from __future__ import annotations

import time

from openenv.envs.repl.identity import is_root
from tests._require import require
from tests.envs.repl.conftest import CELL_LIMIT_S, GRACE_S, MARGIN_S, run


def _timed(env, code):
    began = time.monotonic()
    obs = run(env, code)
    return obs, time.monotonic() - began


def test_python_loop_is_interrupted_and_namespace_kept(make_env) -> None:
    env = make_env()
    run(env, "kept = 41")
    obs, took = _timed(env, "while True:\n    pass")
    assert obs.outcome == "timeout" and not obs.result.success
    assert took < CELL_LIMIT_S + GRACE_S + MARGIN_S
    assert not obs.namespace_lost
    assert run(env, "kept + 1").result.stdout == "42\n"


def test_sleep_is_interrupted(make_env) -> None:
    env = make_env()
    obs, took = _timed(env, "import time\ntime.sleep(1e6)")
    assert obs.outcome == "timeout" and took < CELL_LIMIT_S + GRACE_S + MARGIN_S
    assert not obs.namespace_lost


def test_builtin_holding_the_gil_is_killed_and_restarted(make_env) -> None:
    env = make_env(reset={"context": "the context"})
    run(env, "lost = 1")
    obs, took = _timed(env, "sum(range(10**12))")
    assert obs.outcome == "timeout" and obs.namespace_lost
    assert "namespace was lost" in (obs.result.exception or "")
    assert took < CELL_LIMIT_S + GRACE_S + MARGIN_S
    after = run(env, "print(context)\nprint('lost' in globals())")
    assert after.result.stdout == "the context\nFalse\n"


def test_ignored_interrupt_is_killed(make_env) -> None:
    env = make_env()
    code = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
    obs, took = _timed(env, code)
    assert obs.outcome == "timeout" and obs.namespace_lost
    assert took < CELL_LIMIT_S + GRACE_S + MARGIN_S
    assert run(env, "1 + 1").result.stdout == "2\n"


def test_huge_string_is_a_memory_error(make_env) -> None:
    env = make_env()
    obs = run(env, "s = 'x' * 10**10")
    assert obs.outcome == "memory" and "MemoryError" in obs.result.exception
    assert run(env, "'still alive'").result.success


def test_runaway_list_growth_is_a_memory_error(make_env) -> None:
    from tests.envs.repl.conftest import test_limits

    env = make_env(limits=test_limits(cell_timeout_s=60))  # a loaded machine may be slow to fill 512 MiB
    obs = run(env, "grow = []\nwhile True:\n    grow.append(' ' * 10**7)")
    assert obs.outcome in ("memory", "worker_died")
    run(env, "grow = None")
    assert run(env, "'fine'").result.stdout == "'fine'\n"


def test_fork_bomb_is_contained(make_env) -> None:
    from tests.envs.repl.conftest import test_limits

    env = make_env(limits=test_limits(cell_timeout_s=60))
    code = (
        "import subprocess\nprocs = []\n"
        "try:\n    for _ in range(200):\n        procs.append(subprocess.Popen(['sleep', '30']))\n"
        "finally:\n    started = len(procs)\n    [p.kill() for p in procs]\n"
    )
    obs = run(env, code)
    assert "BlockingIOError" in (obs.result.exception or "")
    assert int(run(env, "started").result.stdout) <= 24
    bomb = run(env, "import os\nwhile True:\n    os.fork()")
    assert bomb.outcome in ("error", "timeout", "worker_died")
    assert run(env, "'alive'").result.success


def test_output_is_capped_and_sizes_reported(make_env) -> None:
    env = make_env()
    obs = run(env, "print('A' * 100_000)\nimport sys\n_ = sys.stderr.write('E' * 50_000)")
    result = obs.result
    assert result.stdout_chars == 100_001 and result.stderr_chars == 50_000
    assert len(result.stdout) < 8192 + 200 and "truncated" in result.stdout
    assert len(result.stderr) < 8192 + 200
    shell = run(env, "import os\nos.system('yes | head -c 300000')").result
    assert shell.stdout_chars > 300_000 - 10 and len(shell.stdout) < 8192 + 200


def test_reprs_are_capped(make_env) -> None:
    env = make_env()
    snap = run(env, "big = 'y' * 100_000\nrows = list(range(100_000))").result.locals_snapshot
    assert len(snap["big"]) < 700 and "100000 chars" in snap["big"]
    assert len(snap["rows"]) < 700 and "len 100000" in snap["rows"]


def test_exit_variants(make_env) -> None:
    env = make_env()
    run(env, "keep = 'me'")
    for code in ("exit()", "quit(2)", "import sys\nsys.exit('bye')", "raise SystemExit"):
        obs = run(env, code)
        assert obs.outcome == "error" and "SystemExit" in obs.result.exception and not obs.namespace_lost
    assert run(env, "keep").result.stdout == "'me'\n"
    died = run(env, "import os\nos._exit(0)")
    assert died.outcome == "worker_died" and died.namespace_lost
    assert run(env, "'back'").result.stdout == "'back'\n"


def test_working_directory_is_private_and_removed(make_env) -> None:
    a, b = make_env(), make_env()
    cwd_a = run(a, "import os\nopen('note.txt', 'w').write('a')\nos.getcwd()").result.stdout.strip().strip("'")
    cwd_b = run(b, "import os\nos.getcwd()").result.stdout.strip().strip("'")
    assert cwd_a != cwd_b
    peek = run(b, f"import os\nos.listdir({cwd_a!r})")
    if is_root():
        assert "PermissionError" in (peek.result.exception or "")
    mode = run(a, "import os, stat\noct(stat.S_IMODE(os.stat('.').st_mode))").result.stdout
    assert mode.strip() == "'0o700'"
    import os

    a.close()
    assert not os.path.exists(cwd_a)


def test_environment_variables_are_scrubbed(make_env, monkeypatch) -> None:
    monkeypatch.setenv("OPENENV_TEST_SERVER_SECRET", "hunter2-server-secret")
    env = make_env()
    out = run(env, "import os\nprint(sorted(os.environ))\nprint(open('/proc/self/environ').read())").result.stdout
    assert "OPENENV_TEST_SERVER_SECRET" not in out and "hunter2" not in out
    assert "PATH" in out


def test_network_is_off(make_env) -> None:
    import socket

    env = make_env()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        obs = run(env, f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)")
    require(env._sandbox is not None and env._sandbox.network == "off", "network namespaces (run as root)")
    assert not obs.result.success and "OSError" in (obs.result.exception or "")


def test_changed_variables_are_reported(make_env) -> None:
    env = make_env()
    assert run(env, "items = [1]\nn = 1").result.locals_snapshot == {"items": "[1]", "n": "1"}
    assert run(env, "items.append(2)").result.locals_snapshot == {"items": "[1, 2]"}
    assert run(env, "n = 2").result.locals_snapshot == {"n": "2"}
    assert run(env, "m = n").result.locals_snapshot == {"m": "2"}


def test_worker_runs_unprivileged_when_root(make_env) -> None:
    require(is_root(), "root, to drop workers to their own uid")
    env = make_env()
    ids = run(env, "import os\n(os.getuid(), os.geteuid(), os.getgroups())").result.stdout
    uid, euid, groups = eval(ids)  # noqa: S307 - our own worker's repr of a tuple
    assert uid != 0 and euid != 0 and groups == []


def test_cpu_time_backstop(make_env) -> None:
    from tests.envs.repl.conftest import test_limits

    env = make_env(limits=test_limits(cpu_s=1, cell_timeout_s=120))  # 1 CPU second may take long on a busy box
    obs = run(env, "while True:\n    pass")
    assert obs.outcome == "worker_died" and "CPU-time limit" in obs.result.exception
    assert run(env, "'restarted'").result.success


def test_file_size_limit(make_env) -> None:
    from tests.envs.repl.conftest import test_limits

    env = make_env(limits=test_limits(file_mb=1))
    obs = run(env, "with open('big.bin', 'wb') as f:\n    f.write(b'0' * (2 << 20))")
    assert "File too large" in (obs.result.exception or "")


def test_open_files_limit(make_env) -> None:
    from tests.envs.repl.conftest import test_limits

    env = make_env(limits=test_limits(open_files=32))
    obs = run(env, "handles = [open('/dev/null') for _ in range(100)]")
    assert "Too many open files" in (obs.result.exception or "")


def test_fallback_path_without_root_privileges(make_env, monkeypatch) -> None:
    """The weak path (no root, no namespaces: shared uid) still limits and cleans up."""
    from openenv.envs.repl import identity, launch

    monkeypatch.setattr(identity, "is_root", lambda: False)
    monkeypatch.setattr(launch, "is_root", lambda: False)
    env = make_env()
    assert env._sandbox is not None and env._sandbox.ident.uid is None
    assert run(env, "n = 5\nn * 2").result.stdout == "10\n"
    obs, took = _timed(env, "sum(range(10**12))")
    assert obs.outcome == "timeout" and obs.namespace_lost and took < CELL_LIMIT_S + GRACE_S + MARGIN_S
    assert run(env, "'x' * 10**10").outcome == "memory"
    assert run(env, "'after'").result.success


def test_catastrophic_regex_comes_back(make_env) -> None:
    env = make_env()
    obs, took = _timed(env, "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')")
    assert obs.outcome == "timeout" and took < CELL_LIMIT_S + GRACE_S + MARGIN_S
    assert run(env, "'next'").result.success
