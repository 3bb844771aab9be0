"""Write an OpenEnv package around a detected verifiers/ORS environment (``openenv import``).

The layout is the published 0.10's (``openenv.yaml``, ``pyproject.toml``, ``models.py``,
``client.py``, ``server/app.py``, ``server/<name>_environment.py``, the source copied under
``vendor/``), so the package serves on ours and on 0.10 alike.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the source's pyproject dependencies are not read
    tomllib = None  # type: ignore[assignment]
from pathlib import Path

from .detect import DetectedEnvironment, DetectionError, excluded, ors_dependencies

__all__ = ["check_name", "class_prefix", "generate", "source_dependencies", "vendor_name"]

TEMPLATES = Path(__file__).with_name("templates")
VERIFIERS_REQUIREMENT = "verifiers>=0.1.14"
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_USAGE = {
    "verifiers": "Reset shows a dataset row's prompt in `metadata.prompt`; call the `submit` tool with\n"
                 "`{\"completion\": \"...\"}` to get the rubric's reward and per-function `metrics`.",
    "ors": "Reset opens an ORS session (its prompt in `metadata.prompt`); the ORS tools are the MCP tools.",
}  # fmt: skip


def check_name(name: str) -> str:
    """0.10's rule: the package name is a Python identifier not starting with a digit."""
    if not name:
        raise DetectionError("Environment name cannot be empty")
    if not name.isidentifier():
        raise DetectionError(f"Environment name '{name}' is not a valid Python identifier. "
                             "Use snake_case (e.g., 'my_env', 'game_env').")  # fmt: skip
    return name


def class_prefix(name: str) -> str:
    """The class-name prefix 0.10 derives (``my_env`` -> ``My``, ``word_game`` -> ``WordGame``)."""
    base = name[:-4] if name.endswith("_env") else name
    if not base:
        return name.capitalize()
    return "".join(part.capitalize() for part in base.split("_")) if "_" in base else base.capitalize()


def vendor_name(source: Path) -> str:
    """The vendored copy's directory: the source's name when it is an identifier, else hashed."""
    raw = source.name.strip()
    name = raw.replace("-", "_")
    if name.isidentifier() and name == raw:
        return name
    digest = hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:8]
    return f"{name}_{digest}" if name.isidentifier() else f"source_{digest}"


def _dist(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def source_dependencies(source: Path) -> list[str]:
    """Portable requirements the source declares (pyproject's ``[project] dependencies``, requirements.txt)."""
    found: list[str] = []
    pyproject = source / "pyproject.toml"
    if pyproject.exists() and tomllib is not None:
        try:
            declared = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("dependencies")
        except tomllib.TOMLDecodeError:
            declared = None
        found += [d for d in declared or [] if isinstance(d, str)]
    requirements = source / "requirements.txt"
    if requirements.exists():
        for line in requirements.read_text(encoding="utf-8").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line and not line.startswith(("#", "-", ".", "/", "git+", "http://", "https://")):
                found.append(line)
    unique: dict[str, str] = {}
    for dep in found:
        unique.setdefault(_dist(dep), dep.strip())
    return list(unique.values())


def _render(template: str, values: dict[str, str]) -> str:
    text = (TEMPLATES / template).read_text(encoding="utf-8")
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def _copy_source(source: Path, target: Path) -> None:
    def ignore(directory: str, names: list[str]) -> set[str]:
        return {n for n in names if excluded(Path(n))}

    shutil.copytree(source, target, ignore=ignore)
    for pkg in (target.parent, target):
        (pkg / "__init__.py").touch(exist_ok=True)


def generate(source: Path, destination: Path, name: str, detected: DetectedEnvironment) -> list[Path]:
    """Write the package for ``detected`` into ``destination`` (new or empty); return the files written."""
    source = source.resolve()
    vendor = vendor_name(source)
    module = f"{name}.vendor.{vendor}" + (f".{detected.module_path}" if detected.module_path else "")
    deps = ["openenv[core]>=0.2.2", "fastapi>=0.110", "uvicorn>=0.30"]
    extra = source_dependencies(source)
    extra += [VERIFIERS_REQUIREMENT] if detected.source_type == "verifiers" else ors_dependencies(source)
    have = {_dist(d) for d in deps}
    for dep in extra:
        if _dist(dep) not in have:
            deps.append(dep)
            have.add(_dist(dep))
    values = {
        "name": name, "Class": class_prefix(name), "title": " ".join(p.capitalize() for p in name.split("_")),
        "vendor": vendor, "source_module": module, "source_class": detected.class_name,
        "source_type": detected.source_type, "qualified": detected.qualified_name,
        "usage": _USAGE[detected.source_type], "dependencies": json.dumps(deps),
    }  # fmt: skip
    files = {
        "openenv.yaml": "openenv.yaml.tmpl", "pyproject.toml": "pyproject.toml.tmpl", "README.md": "README.md.tmpl",
        "__init__.py": "__init__.py.tmpl", "models.py": "models.py.tmpl", "client.py": "client.py.tmpl",
        "server/__init__.py": "server_init.py.tmpl", "server/app.py": "app.py.tmpl",
        f"server/{name}_environment.py": f"{detected.source_type}_environment.py.tmpl",
        f"tests/test_{name}.py": f"test_{detected.source_type}.py.tmpl", "pytest.ini": "pytest.ini.tmpl",
    }  # fmt: skip
    written = []
    for rel, template in files.items():
        path = destination / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_render(template, values), encoding="utf-8", newline="\n")
        written.append(path)
    requirements = destination / "server" / "requirements.txt"
    requirements.write_text("\n".join(deps) + "\n", encoding="utf-8", newline="\n")
    written.append(requirements)
    _copy_source(source, destination / "vendor" / vendor)
    return written
