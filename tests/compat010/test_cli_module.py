"""``python -m openenv.cli`` and ``openenv.cli.__main__`` (``app``, ``main``) as on 0.10, and the
Auto* factories' wording: one probe run under ours and the published 0.10 prints the same."""

from __future__ import annotations

import subprocess
import sys

from tests.peer010 import ROOT, _clean_env, peer010_python, run_with

PROBE = ROOT / "tests" / "peers010" / "clients" / "cli_main_probe.py"


def test_main_exit_codes_and_factory_messages_match_010():
    ours = run_with(sys.executable, PROBE)
    peer = run_with(peer010_python(), PROBE)
    assert ours.returncode == 0, ours.stderr
    assert peer.returncode == 0, peer.stderr
    assert ours.stdout == peer.stdout
    assert "interrupt (130, '')" in ours.stdout
    assert "error (1, 'Error: Test error')" in ours.stdout


def test_python_dash_m_openenv_cli_runs_the_command():
    done = subprocess.run([sys.executable, "-m", "openenv.cli", "--help"], cwd=str(ROOT), capture_output=True,
                          text=True, timeout=120, env=_clean_env({"PYTHONPATH": str(ROOT)}))
    assert done.returncode == 0, done.stderr
    assert "validate" in done.stdout and "serve" in done.stdout
