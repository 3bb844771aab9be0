"""``openenv skills preview|add``: 0.10's paths, links per assistant, --force and --dest."""

from __future__ import annotations

import os
from pathlib import Path

from tests.cli.conftest import run_cli


def test_preview_is_a_skill_file():
    done = run_cli("skills", "preview")
    assert done.returncode == 0 and done.stdout.startswith("---\nname: openenv-cli\n")
    assert "openenv init" in done.stdout and "openenv push" in done.stdout


def test_add_installs_centrally_and_links_each_assistant(tmp_path: Path):
    done = run_cli("skills", "add", "--claude", "--codex", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    central = tmp_path / ".agents" / "skills" / "openenv-cli"
    assert (central / "SKILL.md").read_text().startswith("---\nname: openenv-cli")
    for agent in (".claude", ".codex"):
        link = tmp_path / agent / "skills" / "openenv-cli"
        assert link.is_symlink() and os.readlink(link) == "../../.agents/skills/openenv-cli"
        assert (link / "SKILL.md").is_file()
    assert not (tmp_path / ".cursor").exists()
    again = run_cli("skills", "add", cwd=tmp_path)
    assert again.returncode == 1 and "Re-run with --force" in again.stdout
    assert run_cli("skills", "add", "--claude", "--force", cwd=tmp_path).returncode == 0


def test_dest_installs_there_and_refuses_agent_flags(tmp_path: Path):
    done = run_cli("skills", "add", "--dest", str(tmp_path / "mine"))
    assert done.returncode == 0 and (tmp_path / "mine" / "openenv-cli" / "SKILL.md").is_file()
    refused = run_cli("skills", "add", "--dest", str(tmp_path / "x"), "--global")
    assert refused.returncode == 1 and "--dest cannot be combined" in refused.stdout
    assert not (tmp_path / "x").exists()
