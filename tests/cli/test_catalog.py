"""``openenv catalog build|inspect`` and ``openenv discover`` over local snapshots in 0.10's
metadata-only format: ours and the published 0.10 build the same snapshot byte for byte from the
same repository, read each other's, and answer the same searches."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from openenv.discovery import CatalogError, build_catalog, compare_catalogs, load_catalog, search_catalog
from tests.cli.conftest import run_cli
from tests.peer010 import _clean_env, peer010_python

URI = "https://github.com/example-org/envs-repo.git"
DISCOVERY = {"description": "Play tic-tac-toe against a scripted opponent", "tags": ["games", "board"],
             "representative_queries": ["play a board game", "tic tac toe"], "license": "Apache-2.0"}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Git repository with three envs under envs/: our scaffold, one with discovery.json, one broken."""
    root = tmp_path_factory.mktemp("catalog") / "repo"
    (root / "envs").mkdir(parents=True)
    assert run_cli("init", "guess_number", "-o", str(root / "envs")).returncode == 0
    ttt = root / "envs" / "tictactoe"
    ttt.mkdir()
    (ttt / "openenv.yaml").write_text("spec_version: 1\nname: tictactoe\napp: server.app:app\n")
    (ttt / "discovery.json").write_text(json.dumps(DISCOVERY))
    (ttt / "pyproject.toml").write_text('[project]\nname = "openenv-tictactoe"\nlicense = "MIT"\n'
                                        'dependencies = ["openenv>=0.2"]\n')
    (root / "pyproject.toml").write_text('[project]\nname = "envs-repo"\nlicense = "BSD-3-Clause"\n')
    _git(root, "init", "-q", "-b", "main")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@example.org", "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "envs")
    return root


def _build(repo: Path, out: Path, *, peer: bool) -> subprocess.CompletedProcess:
    args = ["catalog", "build", "--repository", str(repo), "--repository-uri", URI, "--publisher", "example.org",
            "--output", str(out)]
    if not peer:
        return run_cli(*args)
    return subprocess.run([peer010_python(), "-P", "-m", "openenv.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd="/", env=_clean_env())


def test_ours_and_010_build_the_same_snapshot(repo: Path, tmp_path: Path):
    ours, theirs = tmp_path / "ours.json", tmp_path / "theirs.json"
    done_ours, done_theirs = _build(repo, ours, peer=False), _build(repo, theirs, peer=True)
    assert done_theirs.returncode == 0, done_theirs.stderr
    assert done_ours.returncode == 0, done_ours.stderr
    assert ours.read_bytes() == theirs.read_bytes()
    assert done_ours.stderr == done_theirs.stderr  # "2 records, snapshot sha256:..., complete=true"
    snapshot = load_catalog(ours)
    names = {e.display_name: e for e in snapshot.entries}
    assert set(names) == {"guess_number", "tictactoe"} and snapshot.complete
    assert names["tictactoe"].data.license == "Apache-2.0" and names["tictactoe"].tags == ["board", "games"]
    assert names["guess_number"].data.framework_requirement == "openenv>=0.2.2"
    assert names["guess_number"].data.license == "BSD-3-Clause"  # the repository's, as 0.10 falls back


def test_discover_and_inspect_answer_as_010_does(repo: Path, tmp_path: Path):
    snap = tmp_path / "snap.json"
    assert _build(repo, snap, peer=True).returncode == 0  # 0.10's snapshot, read by ours
    for args in (["discover", "board game", "--catalog", str(snap)],
                 ["discover", "guess number", "--catalog", str(snap), "--json"],
                 ["discover", "", "--catalog", str(snap), "--filter", "license=MIT", "--limit", "1"]):
        ours = run_cli(*args)
        theirs = subprocess.run([peer010_python(), "-P", "-m", "openenv.cli", *args], capture_output=True,
                                text=True, timeout=120, cwd="/", env=_clean_env())
        assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout), args
    ident = load_catalog(snap).entries[0].identifier
    shown = run_cli("catalog", "inspect", ident, "--catalog", str(snap))
    assert shown.returncode == 0 and json.loads(shown.stdout)["identifier"] == ident


@pytest.mark.parametrize(("args", "words"), [
    (["discover", "x", "--filter", "nofield"], "filters must be distinct field=value pairs"),
    (["discover", "x", "--filter", "color=red"], "Unsupported filter: color"),
    (["catalog", "inspect", "urn:air:nope", "--catalog", "{snap}"], "Entry not found"),
])
def test_catalog_errors_are_one_line(repo: Path, tmp_path: Path, args, words):
    snap = tmp_path / "snap.json"
    assert _build(repo, snap, peer=False).returncode == 0
    args = [a.replace("{snap}", str(snap)) for a in args]
    done = run_cli(*args, *([] if "--catalog" in args else ["--catalog", str(snap)]))
    assert done.returncode == 1 and f"Catalog error: {words}" in done.stderr and "Traceback" not in done.stderr


def test_a_tampered_or_incomplete_snapshot_is_refused(repo: Path, tmp_path: Path):
    snap = tmp_path / "snap.json"
    assert _build(repo, snap, peer=False).returncode == 0
    data = json.loads(snap.read_text())
    data["entries"][0]["description"] = "changed after signing"
    snap.write_text(json.dumps(data))
    with pytest.raises(CatalogError, match="does not match its snapshot digest"):
        load_catalog(snap)
    broken = repo.parent / "broken"
    subprocess.run(["git", "clone", "-q", str(repo), str(broken)], check=True, timeout=60)
    (broken / "envs" / "nameless").mkdir()
    (broken / "envs" / "nameless" / "openenv.yaml").write_text("spec_version: 1\n")
    _git(broken, "add", "-A")
    _git(broken, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "nameless")
    snapshot = build_catalog(broken, repository_uri=URI, publisher="example.org")
    assert not snapshot.complete and snapshot.issues[0].path == "envs/nameless"
    with pytest.raises(CatalogError, match="incomplete"):
        search_catalog(snapshot, "x")
    done = _build(broken, tmp_path / "partial.json", peer=False)
    assert done.returncode == 1 and "error: envs/nameless:" in done.stderr


def test_compare_catalogs_after_a_refresh(repo: Path, tmp_path: Path):
    before = build_catalog(repo, repository_uri=URI, publisher="example.org")
    moved = repo.parent / "moved"
    subprocess.run(["git", "clone", "-q", str(repo), str(moved)], check=True, timeout=60)
    (moved / "envs" / "tictactoe" / "README.md").write_text("# tictactoe\n")
    shutil.rmtree(moved / "envs" / "guess_number")
    _git(moved, "add", "-A")
    _git(moved, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "refresh")
    after = build_catalog(moved, repository_uri=URI, publisher="example.org")
    changes = compare_catalogs(before, after)
    assert [e.display_name for e in changes.withdrawn] == ["guess_number"] and changes.added == []
    assert [c.current.display_name for c in changes.superseded] == ["tictactoe"]  # a new revision card
    assert compare_catalogs(after, after).superseded == []
    with pytest.raises(CatalogError, match="preserve publisher"):
        compare_catalogs(before, build_catalog(repo, repository_uri=URI, publisher="other.example.org"))
