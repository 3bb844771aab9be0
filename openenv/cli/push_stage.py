"""The files ``openenv push`` uploads to a Hugging Face Space, as 0.10 stages them: the env
directory minus ignored paths, the Dockerfile at the root (``server/Dockerfile`` moved up, its
``FROM`` replaced by ``--base-image``, ``ENABLE_WEB_INTERFACE`` set when the interface is on) and a
README whose frontmatter has ``base_path: /web``."""

from __future__ import annotations

import shutil
from fnmatch import fnmatch
from pathlib import Path

import click

__all__ = ["DEFAULT_IGNORE", "excluded", "load_ignore_patterns", "rewrite_dockerfile", "stage"]

DEFAULT_IGNORE = [".*", "__pycache__", "*.pyc", "build/", "*.egg-info"]
_WEB_ENV = "ENV ENABLE_WEB_INTERFACE=true"


def _matches(rel: Path, pattern: str) -> bool:
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.lstrip("/")
    if not pattern or pattern.startswith("!"):
        return False
    candidates = [pattern] + ([pattern[3:]] if pattern.startswith("**/") else [])
    path = rel.as_posix()
    if pattern.endswith("/"):  # a directory and everything under it
        bases = [c.rstrip("/") for c in candidates if c.rstrip("/")]
        return any(fnmatch(path, b) or fnmatch(path, b + "/*") for b in bases)
    return any(fnmatch(path, c) or fnmatch(rel.name, c) for c in candidates)


def excluded(rel: Path, patterns: list[str]) -> bool:
    """Whether the env-relative path ``rel`` is left out of the upload."""
    return any(_matches(rel, p) for p in patterns)


def load_ignore_patterns(env_dir: Path, exclude_file: str | None) -> list[str]:
    """The default patterns plus those of ``--exclude FILE`` (relative to the env; ``!`` unsupported)."""
    patterns = list(DEFAULT_IGNORE)
    if exclude_file:
        path = Path(exclude_file)
        path = (path if path.is_absolute() else env_dir / path).resolve()
        if not path.is_file():
            raise click.BadParameter(f"Exclude file not found or not a file: {path}")
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
        kept = [line for line in lines if line and not line.startswith(("#", "!"))]
        negated = sum(1 for line in lines if line.startswith("!"))
        patterns += kept
        click.echo(f"✓ Loaded {len(kept)} ignore patterns from --exclude: {path}")
        if negated:
            click.echo(f"⚠ Skipped {negated} negated ignore patterns ('!'): negation is not supported for push excludes")
    return list(dict.fromkeys(patterns))


def rewrite_dockerfile(text: str, *, base_image: str | None, enable_interface: bool) -> str:
    """``FROM`` replaced by ``base_image`` (the first one); ``ENABLE_WEB_INTERFACE`` before the first
    ``CMD`` (not a HEALTHCHECK's) when the interface is on and the file does not set it already."""
    out: list[str] = []
    web_done = "ENABLE_WEB_INTERFACE" in text
    replaced = False
    previous = ""
    for line in text.split("\n"):
        stripped = line.strip()
        word = stripped.split(maxsplit=1)[0].upper() if stripped else ""
        if base_image and not replaced and word == "FROM":
            out.append(f"FROM {base_image}")
            replaced, previous = True, "FROM"
            continue
        if enable_interface and not web_done and word == "CMD" and previous != "HEALTHCHECK":
            out.append(_WEB_ENV)
            web_done = True
        out.append(line)
        if word:
            previous = word
    if enable_interface and not web_done:
        out.append(_WEB_ENV)
    if base_image and not replaced:
        out.insert(0, f"FROM {base_image}")
    return "\n".join(out)


def _readme(staged: Path, env_name: str) -> None:
    readme = staged / "README.md"
    if not readme.is_file():
        click.echo("⚠ No README.md found")
        return
    text = readme.read_text(encoding="utf-8")
    if "base_path: /web" in text:
        return
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is not None:
            lines.insert(end, "base_path: /web")
            readme.write_text("\n".join(lines), encoding="utf-8")
            return
    title = env_name.replace("_", " ").title()
    front = (f"---\ntitle: {title} Environment Server\nemoji: 🎮\ncolorFrom: blue\ncolorTo: indigo\nsdk: docker\n"
             "pinned: false\napp_port: 8000\nbase_path: /web\ntags:\n  - openenv\n---\n\n")
    readme.write_text(front + text, encoding="utf-8")
    click.echo("✓ Updated README with HF Space frontmatter")


def stage(env_dir: Path, env_name: str, staged: Path, patterns: list[str], *, base_image: str | None,
          enable_interface: bool) -> None:
    """Copy ``env_dir`` into ``staged`` as a Space wants it (see the module docstring)."""
    staged.mkdir(parents=True, exist_ok=True)

    def ignore(directory: str, names: list[str]) -> set[str]:
        here = Path(directory)
        return {n for n in names if excluded((here / n).relative_to(env_dir), patterns)}

    for item in env_dir.iterdir():
        if excluded(item.relative_to(env_dir), patterns):
            continue
        if item.is_dir():
            shutil.copytree(item, staged / item.name, dirs_exist_ok=True, ignore=ignore)
        else:
            shutil.copy2(item, staged / item.name)
    root, server = staged / "Dockerfile", staged / "server" / "Dockerfile"
    if not root.exists() and server.exists():
        server.rename(root)
        click.echo("Moved Dockerfile to repository root for deployment")
    if root.exists():
        root.write_text(rewrite_dockerfile(root.read_text(encoding="utf-8"), base_image=base_image,
                                           enable_interface=enable_interface), encoding="utf-8")
    else:
        click.echo("⚠ No Dockerfile at server/ or repo root")
    if enable_interface:
        _readme(staged, env_name)
