"""What ``openenv validate DIR`` checks: the package's files, then the contract in process and
over the wire against the directory's own app, served on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from openenv.auto import TargetError, load_app, resolve_target
from openenv.auto.resolve import read_manifest
from openenv.core.env_server.serialization import to_jsonable
from openenv.core.testing import check_round_trip
from openenv.core.testing_checks import IN_PROCESS_CHECKS, EnvUnderTest
from openenv.core.testing_report import CheckFailed, CheckReport, CheckSkipped, CheckWarning
from openenv.core.testing_server import serve_in_thread
from openenv.core.testing_wire_checks import run_wire_checks

__all__ = ["validate_directory"]


def _check_files(root: Path) -> str:
    spec, _ = resolve_target(str(root))
    return f"serves {spec}"


def _check_manifest(root: Path) -> str:
    """0.10's ``openenv.yaml``: a mapping with a name and, when given, an ``app`` of the form module:attr."""
    if not (root / "openenv.yaml").is_file():
        raise CheckWarning("no openenv.yaml: the published openenv's validate and push need one (openenv init writes it)")
    try:
        manifest = read_manifest(root)
    except TargetError as exc:
        raise CheckFailed(str(exc)) from None
    if not isinstance(manifest.get("name"), str) or not manifest["name"]:
        raise CheckFailed("openenv.yaml: 'name' is missing")
    app = manifest.get("app")
    if app is not None and (not isinstance(app, str) or ":" not in app):
        raise CheckFailed(f"openenv.yaml: app {app!r} is not module:attribute")
    return f"name {manifest['name']!r}, app {app or 'server.app:app (default)'}"


def _check_readme(root: Path) -> str:
    readme = root / "README.md"
    if not readme.is_file() or not readme.read_text(encoding="utf-8", errors="replace").strip():
        raise CheckWarning("no README.md: say what the env does, its actions and rewards")
    return "README.md"


def _check_tests(root: Path) -> str:
    found = sorted(p.name for p in (root / "tests").glob("test_*.py")) if (root / "tests").is_dir() else []
    if not found:
        raise CheckWarning("no tests/test_*.py: add one using openenv.core.testing.EnvContractTests")
    return ", ".join(found)


def _check_requirements(root: Path) -> str:
    for name in ("pyproject.toml", "requirements.txt", "setup.py"):
        if (root / name).is_file():
            return f"{name} (installed by openenv build)"
    raise CheckWarning("no pyproject.toml or requirements.txt: the image gets OpenEnv Studio's openenv only")


def _load(root: Path, holder: dict[str, Any]) -> str:
    try:
        holder["app"] = load_app(str(root))
    except TargetError as exc:
        raise CheckFailed(str(exc)) from None
    server = getattr(getattr(holder["app"], "state", None), "env_server", None)
    if server is None:
        raise CheckWarning("the app was not built by create_app: only the wire checks apply")
    holder["server"] = server
    return f"{type(server).__name__} for {getattr(server.env_cls, '__name__', 'an env')}"


def validate_directory(
    path: str | Path,
    *,
    actions: Sequence[dict[str, Any]] | None = None,
    seed: int = 0,
    max_steps: int = 50,
    deterministic_steps: bool = True,
    static_only: bool = False,
) -> CheckReport:
    """Check an env directory: files, the contract in process, then a real episode over the wire
    (``static_only``: the files and manifest alone, no code of the env run)."""
    root = Path(path).resolve()
    report = CheckReport(str(path))
    report.run("package.manifest", lambda: _check_manifest(root))
    if report.run("package.app_module", lambda: _check_files(root)).status == "fail":
        return report
    report.run("package.readme", lambda: _check_readme(root))
    report.run("package.tests", lambda: _check_tests(root))
    report.run("package.requirements", lambda: _check_requirements(root))
    if static_only:
        return report
    holder: dict[str, Any] = {}
    if report.run("package.app", lambda: _load(root, holder)).status == "fail":
        return report
    server = holder.get("server")
    ctx = None
    if server is not None:
        source = server.instance if server.instance is not None else server.sessions.factory
        ctx = EnvUnderTest(source, actions=actions, action_cls=server.action_cls,
                           observation_cls=server.observation_cls,
                           reset_observation_cls=getattr(server, "reset_observation_cls", None),
                           seed=seed, max_steps=max_steps,
                           deterministic_steps=deterministic_steps)
        for name, check in IN_PROCESS_CHECKS:
            report.run(name, lambda check=check: check(ctx))
    with serve_in_thread(holder["app"]) as url:
        if ctx is not None:
            report.run("wire.round_trip", lambda: check_round_trip(ctx, url))
        else:
            report.run("wire.round_trip", lambda: _skip("no env server to compare with"))
        wire_actions = list(actions or []) or ([to_jsonable(a) for a in ctx.actions] if ctx else None)
        run_wire_checks(url, actions=wire_actions, seed=seed, max_steps=max_steps,
                        deterministic_steps=deterministic_steps, report=report)
    return report


def _skip(reason: str) -> None:
    raise CheckSkipped(reason)
