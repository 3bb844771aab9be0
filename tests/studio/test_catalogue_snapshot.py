"""The studio's catalogue browses a local catalog snapshot (0.10's metadata-only format): added by
path, its environments listed with description, source and license, nothing offered to launch."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from openenv.discovery import build_catalog, write_catalog
from tests.studio.conftest import StudioClient
from tests.studio.html import fragment

URI = "https://github.com/example-org/envs-repo.git"


def _snapshot(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    env = repo / "envs" / "maze"
    env.mkdir(parents=True)
    (env / "openenv.yaml").write_text("spec_version: 1\nname: maze\ndescription: Walk out of a maze\n")
    (env / "pyproject.toml").write_text('[project]\nname = "openenv-maze"\nlicense = "MIT"\n')
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, timeout=60)
    subprocess.run([*git, "add", "-A"], check=True, timeout=60)
    subprocess.run([*git, "commit", "-qm", "maze"], check=True, timeout=60)
    out = tmp_path / "catalog.json"
    write_catalog(build_catalog(repo, repository_uri=URI, publisher="example.org"), out)
    return out


def test_a_snapshot_is_browsed_not_launched(sc: StudioClient, tmp_path: Path) -> None:
    snap = _snapshot(tmp_path)
    resp = sc.post("/envs/catalogue", {"target": str(snap)})
    assert resp.status_code == 200, resp.text[:2000]
    frag = fragment(resp.text)
    head = frag.find("tr", data_target=str(snap))
    assert head is not None and "1 environments (metadata only)" in head.text()
    ident = json.loads(snap.read_text())["entries"][0]["identifier"]
    row = frag.find("tr", data_target=ident)
    assert row is not None and "maze" in row.text() and "Walk out of a maze" in row.text()
    assert "license MIT" in row.text() and "metadata only" in row.text()
    assert row.find("a", class_="launch-open") is None
    refused = sc.http.get(f"/envs/launch/{row.attrs['data-entry']}")
    assert refused.status_code == 400 and "nothing to launch" in refused.text
    resp = sc.post(f"/envs/catalogue/{head.attrs['data-entry']}/remove")
    assert fragment(resp.text).find("tr", data_target=ident) is None


def test_a_tampered_snapshot_is_refused_inline(sc: StudioClient, tmp_path: Path) -> None:
    snap = _snapshot(tmp_path)
    data = json.loads(snap.read_text())
    data["entries"][0]["description"] = "edited"
    snap.write_text(json.dumps(data))
    resp = sc.post("/envs/catalogue", {"target": str(snap)})
    assert resp.status_code == 422 and "does not match its snapshot digest" in resp.text
