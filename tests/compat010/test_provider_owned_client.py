"""``EnvClient(provider=p)`` without ``base_url``: the client starts the provider on connect, waits
for it, and stops it on close, as 0.10 does; a provider that needs an image, or neither argument,
fails with 0.10's ``ValueError``. One probe, run under ours and the published 0.10, prints the same."""

from __future__ import annotations

import sys

from tests.peer010 import PEERS010, peer010_python, run_with

PROBE = PEERS010 / "clients" / "provider_owned_probe.py"
ARGS = (str(PEERS010 / "serve_file.py"), str(PEERS010 / "envs" / "rubric_env.py"))


def test_provider_owned_startup_matches_010():
    ours = run_with(sys.executable, PROBE, *ARGS)
    peer = run_with(peer010_python(), PROBE, *ARGS)
    assert ours.returncode == 0, ours.stderr
    assert peer.returncode == 0, peer.stderr
    assert ours.stdout == peer.stdout
    assert "events ['start', 'ready', 'stop'] exited True" in ours.stdout
