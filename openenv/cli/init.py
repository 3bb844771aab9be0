"""``openenv init``: scaffold a new environment in the published openenv 0.10's layout.

Templates in ``scaffold/`` are plain files ending in ``.tmpl``; ``{{key}}`` placeholders are
replaced, and ``package_environment.py`` becomes ``<name>_environment.py``. The result is a 0.10
env package (``openenv.yaml``, ``pyproject.toml``, ``models.py``, ``client.py``, ``server/``)
plus our ``tests/`` (the contract kit and the game's own tests).
"""

from __future__ import annotations

import keyword
import random
import sys
from pathlib import Path

import click

__all__ = ["init", "render_scaffold", "scaffold_names"]

TEMPLATES = Path(__file__).with_name("scaffold")
# Names that would shadow a module the package itself imports or is served next to.
_RESERVED = {"openenv", "webui", "server", "client", "models", "tests", "test"}
_COLORS = ("red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray")
_EMOJIS = ("🎮", "🎯", "🚀", "🌟", "🎲", "🧩", "🏆", "🎨", "🔭", "🧪")


class ScaffoldError(ValueError):
    """The name or the target directory cannot be used."""


def check_name(name: str) -> str:
    """0.10's rule (a Python identifier, so snake_case), plus names that would break the package."""
    if not name:
        raise ScaffoldError("Environment name cannot be empty")
    if not name.isidentifier():
        raise ScaffoldError(f"Environment name '{name}' is not a valid Python identifier. "
                            "Use snake_case (e.g., 'my_env', 'game_env').")  # fmt: skip
    if keyword.iskeyword(name) or name in _RESERVED or name in sys.stdlib_module_names:
        raise ScaffoldError(f"Environment name '{name}' would shadow the module {name!r}; pick another name")
    return name


def class_prefix(name: str) -> str:
    """0.10's class prefix: ``my_game_env`` -> ``MyGame``, ``test_env`` -> ``Test``, ``echo`` -> ``Echo``."""
    base = name[:-4] if name.endswith("_env") else name
    return "".join(part.capitalize() for part in (base or name).split("_")) or name.capitalize()


def scaffold_names(name: str, rng: random.Random | None = None) -> dict[str, str]:
    """Placeholder values for the env ``name`` (snake_case, e.g. ``guess_number``)."""
    check_name(name)
    rng = rng or random.Random()
    return {
        "name": name,
        "Prefix": class_prefix(name),
        "title": " ".join(part.capitalize() for part in name.split("_") if part),
        "image": f"openenv-{name.removesuffix('_env')}",
        "emoji": rng.choice(_EMOJIS),
        "color_from": rng.choice(_COLORS),
        "color_to": rng.choice(_COLORS),
    }


def _render(text: str, values: dict[str, str], source: Path) -> str:
    out = text
    for key, value in values.items():
        out = out.replace("{{" + key + "}}", value)
    if "{{" in out:
        raise ScaffoldError(f"template {source.name}: unknown placeholder near {out[out.index('{{'):][:30]!r}")
    return out


def render_scaffold(name: str, directory: str | Path) -> list[Path]:
    """Write a new env called ``name`` into ``directory`` (new or empty); return the files written."""
    target = Path(directory)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ScaffoldError(f"Directory '{target}' already exists and is not empty. "
                            "Please choose a different name or remove the existing directory.")  # fmt: skip
    values = scaffold_names(name)
    planned: list[tuple[Path, str]] = []
    for source in sorted(TEMPLATES.rglob("*.tmpl")):
        rel = source.relative_to(TEMPLATES).with_suffix("")
        parts = list(rel.parts)
        parts[-1] = parts[-1].replace("package_environment", f"{name}_environment")
        if parts[-1] == "test_package.py":
            parts[-1] = f"test_{name}.py"
        planned.append((target.joinpath(*parts), _render(source.read_text(encoding="utf-8"), values, source)))
    written = []
    for path, text in planned:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        written.append(path)
    return written


@click.command("init")
@click.argument("env_name")
@click.option("--output-dir", "-o", "output_dir", type=click.Path(file_okay=False), default=None,
              help="Output directory (defaults to current working directory); the env goes in OUTPUT_DIR/ENV_NAME.")
def init(env_name: str, output_dir: str | None) -> None:
    """Initialize a new OpenEnv environment ENV_NAME (snake_case, e.g. 'my_env') in 0.10's layout."""
    try:
        check_name(env_name)
    except ScaffoldError as exc:
        raise click.BadParameter(str(exc), param_hint="'ENV_NAME'") from None
    base = Path(output_dir).resolve() if output_dir else Path.cwd().resolve()
    target = base / env_name
    if target.is_file():
        raise click.BadParameter(f"Path '{target}' exists and is a file", param_hint="'ENV_NAME'")
    try:
        written = render_scaffold(env_name, target)
    except ScaffoldError as exc:
        raise click.BadParameter(str(exc), param_hint="'ENV_NAME'") from None
    except OSError as exc:
        raise click.ClickException(str(exc)) from None
    prefix = class_prefix(env_name)
    click.echo(f"Creating OpenEnv environment '{env_name}'...")
    click.echo(f"✓ Created {len(written)} files")
    click.echo(f"\nEnvironment created successfully at: {target}")
    click.echo("\nNext steps:")
    for line in (f"cd {target}",
                 f"# Edit the environment in server/{env_name}_environment.py and the types in models.py",
                 "pytest                 # the contract and the game's tests",
                 "openenv serve          # then open http://127.0.0.1:8000/web",
                 "openenv validate",
                 f"openenv build          # image openenv-{env_name.removesuffix('_env')}:latest",
                 f"# Client: from {env_name} import {prefix}Env, {prefix}Action"):
        click.echo(f"  {line}")
