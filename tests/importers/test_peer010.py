"""Differential against the published 0.10: detection, and imported packages served by 0.10 and by ours."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from openenv.core import GenericEnvClient
from openenv.importers.detect import detect
from tests._require import require
from tests.importers.helpers import ROOT, SOURCES, cli, need, serving
from tests.peer010 import peer010_python

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def peer() -> str:
    python = Path(peer010_python())
    marker = python.parent.parent / ".ok-importers"
    if not marker.exists() and os.environ.get("OPENENV_REQUIRE_ALL"):
        subprocess.run([str(ROOT / "scripts" / "peer-openenv-010-importers")], check=True, timeout=1200)
    require(marker.exists(), "verifiers + openreward in the 0.10 peer venv (scripts/peer-openenv-010-importers)")
    return str(python)


_DETECT = """
import json, sys
from pathlib import Path
from openenv.cli.importers import DEFAULT_IMPORTERS, ImporterRegistry
found = ImporterRegistry(DEFAULT_IMPORTERS).detect(Path(sys.argv[1]))
print(json.dumps(sorted([d.source_type, d.qualified_name] for _, d in found)))
"""


@pytest.mark.parametrize("source", ["vf_single", "vf_multi", "vf_tools", "ors_quiz", "not_an_env", "vf_without_import"])
def test_detection_matches_010(peer: str, source: str) -> None:
    out = subprocess.run([peer, "-P", "-c", _DETECT, str(SOURCES / source)], capture_output=True, text=True,
                         timeout=120, check=True).stdout  # fmt: skip
    ours = sorted([d.source_type, d.qualified_name] for d in detect(SOURCES / source))
    assert json.loads(out) == ours


def _import_010(peer: str, source: str, name: str, out: Path, *extra: str) -> Path:
    done = subprocess.run([str(Path(peer).with_name("openenv")), "import", str(SOURCES / source), "--name", name,
                           "--output-dir", str(out), *extra], capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return out / name


def _import_ours(source: str, name: str, out: Path, *extra: str) -> Path:
    done = cli("import", str(SOURCES / source), "--name", name, "--output-dir", str(out), *extra)
    assert done.returncode == 0, done.stderr
    return out / name


def _play(url: str, reset: dict[str, Any], calls: list[dict[str, Any]]) -> list[Any]:
    """What a client sees: the tools, the reset metadata, each call's reward/done/result/metadata."""
    seen: list[Any] = []
    with GenericEnvClient(base_url=url).sync() as env:
        tools = env.step({"type": "list_tools"}).observation["tools"]
        seen.append(sorted((t["name"], json.dumps(t.get("input_schema"), sort_keys=True)) for t in tools))
        for arguments in calls:
            first = env.reset(**reset)
            meta = first.observation.get("metadata") or first.metadata
            seen.append({k: meta.get(k) for k in ("source_type", "task_spec", "prompt")})
            r = env.step({"type": "call_tool", "tool_name": "submit", "arguments": arguments})
            obs = r.observation
            result = obs.get("result") or {}
            seen.append({"reward": r.reward, "done": r.done, "blocks": result.get("blocks"),
                         "metrics": (obs.get("metadata") or {}).get("metrics", (obs.get("metadata") or {}).get("exact"))})
    return seen


def test_ors_import_010_on_010_equals_ours_on_ours(peer: str, tmp_path: Path) -> None:
    need("openreward")
    theirs = _import_010(peer, "ors_quiz", "capitals", tmp_path / "theirs", "--type", "ors")
    ours = _import_ours("ors_quiz", "capitals", tmp_path / "ours", "--type", "ors")
    calls = [{"city": "Tokyo"}, {"city": "Osaka"}]
    with serving(str(theirs), python=peer, ours=False, pythonpath=str(theirs.parent)) as url:
        published = _play(url, {"split": "train", "index": 1}, calls)
    with serving(str(ours)) as url:
        mine = _play(url, {"split": "train", "index": 1}, calls)
    assert mine == published
    assert published[2]["reward"] == 1.0 and published[4]["reward"] == 0.0


def test_our_verifiers_package_serves_on_010_as_on_ours(peer: str, tmp_path: Path) -> None:
    need("verifiers")
    ours = _import_ours("vf_single", "doubling", tmp_path)
    calls = [{"completion": "2"}, {"completion": "three"}]
    with serving(str(ours), python=peer, ours=False) as url:
        published = _play(url, {"split": "train", "index": 1}, calls)
    with serving(str(ours)) as url:
        mine = _play(url, {"split": "train", "index": 1}, calls)
    assert mine == published
    assert published[2]["reward"] == pytest.approx(1.5) and published[4]["reward"] == 0.0
    assert published[2]["metrics"]["exact"] == 1.0 and published[4]["metrics"]["short"] == 0.0


def test_010s_own_verifiers_package_loads_off_the_main_thread(peer: str, tmp_path: Path) -> None:
    """Why ours loads the env at import: 0.10's wrapper builds it lazily in a worker thread, where
    verifiers 0.3's ``signal.signal`` raises, so its reset fails (measured; kept as a regression guard)."""
    need("verifiers")
    theirs = _import_010(peer, "vf_single", "doubling", tmp_path)
    with serving(str(theirs), python=peer, ours=False, pythonpath=str(tmp_path)) as url:
        with GenericEnvClient(base_url=url).sync() as env, pytest.raises(Exception, match="(?i)error"):
            env.reset(split="train", index=1)
