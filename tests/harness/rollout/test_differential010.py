"""Ours against the published 0.10 (its own venv): the same collect script and the same
``openenv collect`` command line, on the same env server, give the same outputs byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.peer010 import ROOT, peer010_python

from .conftest import PKGS

SCRIPT = Path(__file__).parent / "collect_script.py"


def _env(ours: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENENV_EPISODES_DB")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(PKGS)] if ours else [str(PKGS)])
    return env


def _run(ours: bool, args: list[str], timeout: float = 180) -> subprocess.CompletedProcess:
    python = sys.executable if ours else peer010_python()
    proc = subprocess.run([python, *([] if ours else ["-P"]), *args], cwd=str(ROOT) if ours else "/", env=_env(ours),
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip
    assert proc.returncode == 0, f"{'ours' if ours else '0.10'} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def _last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])  # 0.10's rich progress shares stdout


def test_collect_runner_matches_010(ttt_url: str, tmp_path: Path) -> None:
    ours = _last_json(_run(True, [str(SCRIPT), "runner", ttt_url, str(tmp_path / "ours")]).stdout)
    peer = _last_json(_run(False, [str(SCRIPT), "runner", ttt_url, str(tmp_path / "peer")]).stdout)
    assert ours == peer
    # what the script exercised: a win, a failed task, a dropped record, then a resumed run
    assert ours["first"] == {"avg_reward": 1.0, "episode_ids": ["ttt-000000", "ttt-000001", "ttt-000002"],
                             "num_collected": 1, "num_dropped": 1, "num_failed": 1, "num_skipped": 0,
                             "success_rate": 1.0}  # fmt: skip
    assert ours["second"]["num_skipped"] == 1 and ours["second"]["num_collected"] == 2
    assert [r["episode_id"] for r in ours["rows"]] == ["ttt-000000", "ttt-000002", "ttt-000003"]
    for name in ("results.jsonl", "metadata.json"):
        assert (tmp_path / "ours" / name).read_bytes() == (tmp_path / "peer" / name).read_bytes(), name


def test_rollout_func_dict_matches_010(ttt_url: str) -> None:
    ours = _last_json(_run(True, [str(SCRIPT), "rollout_func", ttt_url]).stdout)
    peer = _last_json(_run(False, [str(SCRIPT), "rollout_func", ttt_url]).stdout)
    assert ours == peer
    assert sorted(ours) == ["completion_ids", "env_reward", "logprobs", "prompt_ids", "verify_metrics"]
    assert ours["env_reward"] == [1.0, 1.0] and ours["completion_ids"][0] == [100, 101, 102]


def test_openenv_collect_cli_matches_010(ttt_url: str, tmp_path: Path) -> None:
    args = ["collect", "openspiel:tic_tac_toe", "--base-url", ttt_url, "-n", "3", "--episode-id-prefix", "cli"]
    _run(True, ["-m", "openenv", *args, "-o", str(tmp_path / "ours"), "--db", str(tmp_path / "ours.db")])
    peer_cli = str(Path(peer010_python()).with_name("openenv"))
    proc = subprocess.run([peer_cli, *args, "-o", str(tmp_path / "peer")], cwd="/", env=_env(False),
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    ours_meta = json.loads((tmp_path / "ours" / "metadata.json").read_text())
    peer_meta = json.loads((tmp_path / "peer" / "metadata.json").read_text())
    assert list(ours_meta) == list(peer_meta)
    assert ours_meta == peer_meta
    assert (tmp_path / "ours" / "results.jsonl").read_bytes() == (tmp_path / "peer" / "results.jsonl").read_bytes()
    assert "Collected" in proc.stdout


def test_the_collect_tutorial_runs_the_same_on_both(ttt_url: str, tmp_path: Path) -> None:
    tutorial = str(Path(__file__).parent / "tutorial_collect.py")
    for mode in ([], [ttt_url]):  # the tutorial's in-process scripted client, then a real server
        ours = _last_json(_run(True, [tutorial, str(tmp_path / f"ours{len(mode)}"), *mode]).stdout)
        peer = _last_json(_run(False, [tutorial, str(tmp_path / f"peer{len(mode)}"), *mode]).stdout)
        assert ours["summary"] == peer["summary"] == (
            "Collected: 4  Skipped: 0  Dropped: 0  Avg reward: 1.000  Success rate: 100%")
        assert ours["first"] == peer["first"] and ours["first"]["episode_id"] == "ttt-000000"
        assert Path(ours["results"]).read_bytes() == Path(peer["results"]).read_bytes()
        assert json.loads(Path(ours["metadata"]).read_text())["teacher_model"] == "scripted-demo"


def test_session_mcp_bridge_and_verify_match_010(ttt_url: str) -> None:
    ours = _last_json(_run(True, [str(SCRIPT), "bridge", ttt_url]).stdout)
    peer = _last_json(_run(False, [str(SCRIPT), "bridge", ttt_url]).stdout)
    assert ours == peer
    codes = [r.get("error", {}).get("code") for r in ours["replies"]]
    assert codes == [None, None, -32600, -32602, -32602, -32601, -32601, -32601, None]
    assert ours["verify"]["env_reward"] == -1.0 and ours["verify"]["done"] is True  # cell 4 twice: an illegal move


def test_public_surface_matches_010() -> None:
    script = str(Path(__file__).parent / "surface_script.py")
    ours = _last_json(_run(True, [script]).stdout)
    peer = _last_json(_run(False, [script]).stdout)
    for module, names in peer.items():
        assert sorted(names) == sorted(ours[module]) or set(names) <= set(ours[module]), module
        for name, described in names.items():
            assert ours[module][name] == described, f"{module}.{name}"


def test_serializer_edge_files_and_dataset_card_match_010(tmp_path: Path) -> None:
    ours = _last_json(_run(True, [str(SCRIPT), "files", "-", str(tmp_path / "ours")]).stdout)
    peer = _last_json(_run(False, [str(SCRIPT), "files", "-", str(tmp_path / "peer")]).stdout)
    assert ours == peer
    assert ours["no_newline"]["write"].startswith('{"episode_id": "a"}\n{"episode_id": "x-1"')
    assert ours["bad_tail"]["write"].startswith("ValueError: <out>/bad_tail/results.jsonl:final line: invalid JSON")
    assert ours["readme"].startswith("---\nconfigs:") and "| `env` | `e` |" in ours["readme"]
