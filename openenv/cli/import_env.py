"""``openenv import``: wrap a verifiers or Open Reward Standard source tree as an OpenEnv package."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

__all__ = ["import_env"]


@click.command("import")
@click.argument("source")
@click.option("--name", "-n", required=True, help="Name for the generated OpenEnv package (a Python identifier).")
@click.option("--output-dir", "-o", required=True, help="Directory where the generated package will be created.")
@click.option("--env-class", default=None, help="Environment class name or module:Class when detection is ambiguous.")
@click.option("--type", "source_type", default=None, help="Source type override: 'verifiers' or 'ors'.")
def import_env(source: str, name: str, output_dir: str, env_class: str | None, source_type: str | None) -> None:
    """Import the environment found in the directory SOURCE (read, never imported) into OUTPUT_DIR/NAME."""
    from openenv.importers.detect import DetectionError, select
    from openenv.importers.package import check_name, generate

    try:
        check_name(name)
    except DetectionError as exc:
        raise click.BadParameter(str(exc), param_hint="'--name'") from None
    src = Path(source).expanduser().resolve()
    if not src.is_dir():
        raise click.BadParameter(f"Source must be an existing directory: {src}", param_hint="'SOURCE'")
    env_dir = Path(output_dir).expanduser().resolve() / name
    if env_dir == src or src in env_dir.parents:
        raise click.BadParameter("Output directory must not be inside the source tree", param_hint="'--output-dir'")
    if env_dir.is_file():
        raise click.BadParameter(f"Path '{env_dir}' exists and is a file", param_hint="'--output-dir'")
    if env_dir.is_dir() and any(env_dir.iterdir()):
        raise click.BadParameter(f"Directory '{env_dir}' already exists and is not empty.", param_hint="'--output-dir'")
    try:
        detected = select(src, source_type, env_class)
    except DetectionError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"Importing environment {detected.qualified_name} as '{name}' ({detected.source_type})")
    existed = env_dir.exists()
    try:
        env_dir.mkdir(parents=True, exist_ok=True)
        written = generate(src, env_dir, name, detected)
    except OSError as exc:
        if not existed:
            shutil.rmtree(env_dir, ignore_errors=True)
        raise click.ClickException(f"could not write {env_dir}: {exc}") from None
    click.echo(f"Environment created at: {env_dir} ({len(written)} files and vendor/). Next:")
    for line in (f"openenv validate {env_dir}", f"openenv serve {env_dir}"):
        click.echo(f"  {line}")
