"""``openenv skills preview|add``: the OpenEnv CLI as a skill for AI coding assistants (0.10's
paths: a central ``.agents/skills/openenv-cli/SKILL.md``, linked from each assistant's directory)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import click

__all__ = ["SKILL_ID", "skill_markdown", "skills"]

SKILL_ID = "openenv-cli"
CENTRAL_LOCAL, CENTRAL_GLOBAL = Path(".agents/skills"), Path("~/.agents/skills")
AGENTS = ("claude", "codex", "cursor", "opencode")
LOCAL_DIRS = {"claude": ".claude/skills", "codex": ".codex/skills", "cursor": ".cursor/skills",
              "opencode": ".opencode/skills"}
GLOBAL_DIRS = {"claude": "~/.claude/skills", "codex": "~/.codex/skills", "cursor": "~/.cursor/skills",
               "opencode": "~/.config/opencode/skills"}

_COMMANDS = (
    ("openenv init <name>", "scaffold an environment (0.10's layout, with tests)"),
    ("openenv serve [dir]", "serve it on 127.0.0.1 with its /web page (--reload while editing)"),
    ("openenv validate [dir | url]", "check files, the contract in process and a real episode over the wire"),
    ("openenv build [dir]", "build its Docker image"),
    ("openenv push [dir]", "deploy to Hugging Face Spaces, or --registry to a Docker registry"),
    ("openenv fork <owner/space>", "duplicate a Space to your account"),
    ("openenv discover <task> --catalog <snapshot.json>", "find environments in a local catalog snapshot"),
    ("openenv studio", "the web studio: play, record and compare episodes"),
    ("openenv skills add --claude", "install this skill (--force to refresh, --dest <dir> elsewhere)"),
)


def skill_markdown() -> str:
    """The generated SKILL.md text."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        current = version("openenv")
    except PackageNotFoundError:
        current = "unknown"
    lines = [
        "---",
        f"name: {SKILL_ID}",
        'description: "OpenEnv CLI (`openenv`) for scaffolding, serving, validating, building and pushing '
        'OpenEnv environments."',
        "---",
        "",
        "The `openenv` command is available (`openenv --help`, `openenv <command> --help`).",
        "",
        f"Generated with `openenv v{current}`. Run `openenv skills add --force` to regenerate.",
        "",
        "## Commands",
        "",
        *(f"- `{cmd}`: {what}" for cmd, what in _COMMANDS),
    ]
    return "\n".join(lines) + "\n"


def _clear(path: Path, force: bool) -> None:
    if not (path.exists() or path.is_symlink()):
        return
    if not force:
        click.echo(f"Skill already exists at {path}. Re-run with --force to overwrite.")
        sys.exit(1)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _install(skills_dir: Path, force: bool) -> Path:
    skills_dir = skills_dir.expanduser().resolve()
    skills_dir.mkdir(parents=True, exist_ok=True)
    dest = skills_dir / SKILL_ID
    _clear(dest, force)
    dest.mkdir()
    (dest / "SKILL.md").write_text(skill_markdown(), encoding="utf-8")
    return dest


def _link(agent_dir: Path, central: Path, force: bool) -> Path:
    agent_dir = agent_dir.expanduser().resolve()
    agent_dir.mkdir(parents=True, exist_ok=True)
    link = agent_dir / SKILL_ID
    _clear(link, force)
    link.symlink_to(os.path.relpath(central, agent_dir))
    return link


@click.group("skills")
def skills() -> None:
    """Manage OpenEnv skills for AI assistants."""


@skills.command("preview")
def preview() -> None:
    """Print the generated SKILL.md."""
    click.echo(skill_markdown())


@skills.command("add")
@click.option("--claude", is_flag=True, help="Install for Claude.")
@click.option("--codex", is_flag=True, help="Install for Codex.")
@click.option("--cursor", is_flag=True, help="Install for Cursor.")
@click.option("--opencode", is_flag=True, help="Install for OpenCode.")
@click.option("--global", "-g", "global_", is_flag=True, help="Install for the user instead of this project.")
@click.option("--dest", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Install into this skills directory instead.")
@click.option("--force", is_flag=True, help="Overwrite an existing skill.")
def add(claude: bool, codex: bool, cursor: bool, opencode: bool, global_: bool, dest: Path | None,
        force: bool) -> None:
    """Install the OpenEnv CLI skill (central copy, then a link per chosen assistant)."""
    chosen = {"claude": claude, "codex": codex, "cursor": cursor, "opencode": opencode}
    if dest is not None:
        if any(chosen.values()) or global_:
            click.echo("--dest cannot be combined with --claude, --codex, --cursor, --opencode, or --global.")
            sys.exit(1)
        click.echo(f"Installed '{SKILL_ID}' to {_install(dest, force)}")
        return
    central = _install(CENTRAL_GLOBAL if global_ else CENTRAL_LOCAL, force)
    click.echo(f"Installed '{SKILL_ID}' to central location: {central}")
    dirs = GLOBAL_DIRS if global_ else LOCAL_DIRS
    for agent in AGENTS:
        if chosen[agent]:
            click.echo(f"Created symlink: {_link(Path(dirs[agent]), central, force)}")
