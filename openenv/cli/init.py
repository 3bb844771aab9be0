"""``openenv init``: scaffold a new environment from the templates in ``scaffold/``.

Templates are plain files ending in ``.tmpl``; ``{{key}}`` placeholders are replaced and a
``package`` path component becomes the env's Python package name.
"""

from __future__ import annotations

import keyword
import re
import sys
from pathlib import Path

import click

__all__ = ["init", "render_scaffold", "scaffold_names"]

TEMPLATES = Path(__file__).with_name("scaffold")
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_PLACEHOLDER_RE = re.compile(r"\{\{(\w+)\}\}")
_RESERVED = {"app", "tests", "test", "openenv", "webui", "server", "client", "models", "environment"}
DOCKERFILE_NOTE = (
    "# Copied from OpenEnv Studio's docker/Dockerfile by `openenv init`, for reference:\n"
    "# `openenv build .` always uses the shared file of the installed OpenEnv Studio, with this\n"
    "# directory staged as env/ in the build context.\n"
)


class ScaffoldError(ValueError):
    """The name or the target directory cannot be used."""


def scaffold_names(name: str, directory: Path) -> dict[str, str]:
    """Placeholder values for ``name`` (e.g. ``guess-number``) scaffolded into ``directory``."""
    if not _NAME_RE.match(name):
        raise ScaffoldError(f"{name!r}: use letters, digits, '-' or '_', starting with a letter")
    package = name.lower().replace("-", "_")
    if keyword.iskeyword(package) or package in _RESERVED or package in sys.stdlib_module_names:
        raise ScaffoldError(f"{name!r} would shadow the module {package!r}; pick another name")
    cls = "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]+", name) if part)
    image = directory.resolve().name.lower().replace("_", "-")
    return {"name": name, "package": package, "Class": cls, "image": image}


def _render(text: str, values: dict[str, str], source: Path) -> str:
    def sub(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise ScaffoldError(f"template {source.name}: unknown placeholder {key!r}")
        return values[key]

    return _PLACEHOLDER_RE.sub(sub, text)


def render_scaffold(name: str, directory: str | Path) -> list[Path]:
    """Write a new env called ``name`` into ``directory`` (new or empty); return the files written."""
    target = Path(directory)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ScaffoldError(f"{target}: already exists and is not an empty directory")
    values = scaffold_names(name, target)
    planned: list[tuple[Path, str]] = []
    for source in sorted(TEMPLATES.rglob("*.tmpl")):
        rel = source.relative_to(TEMPLATES).with_suffix("")
        parts = [values["package"] if part == "package" else part for part in rel.parts]
        if parts[-1] == "test_package.py":
            parts[-1] = f"test_{values['package']}.py"
        planned.append((target.joinpath(*parts), _render(source.read_text(encoding="utf-8"), values, source)))
    dockerfile = _shared_dockerfile()
    if dockerfile is not None:
        planned.append((target / "Dockerfile", DOCKERFILE_NOTE + dockerfile))
    written = []
    for path, text in planned:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _shared_dockerfile() -> str | None:
    from openenv.core.containers.images import dockerfile_path
    from openenv.core.containers.wheelhouse import ImageBuildError

    try:
        return dockerfile_path().read_text(encoding="utf-8")
    except (ImageBuildError, OSError):
        return None


@click.command("init")
@click.argument("name")
@click.option("--dir", "directory", type=click.Path(file_okay=False), default=None,
              help="Directory to create (default: ./NAME); must be new or empty.")
def init(name: str, directory: str | None) -> None:
    """Scaffold a new environment NAME: models, environment, client, app, tests, Dockerfile."""
    target = Path(directory) if directory else Path(name)
    try:
        written = render_scaffold(name, target)
    except (ScaffoldError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    if not any(p.name == "Dockerfile" for p in written):
        click.echo("openenv: this installation ships no env Dockerfile; `openenv build` will say so", err=True)
    click.echo(f"Created {name} in {target} ({len(written)} files). Next:")
    for line in (f"cd {target}", "pytest", "openenv serve .        # then open http://127.0.0.1:8000/web",
                 "openenv validate .", "openenv build ."):
        click.echo(f"  {line}")
