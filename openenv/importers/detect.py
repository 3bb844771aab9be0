"""Find importable environments in a source tree by reading it (``ast``), never importing it.

Two kinds are recognised, as by the published 0.10 ``openenv import``:

* ``verifiers``: a module that imports ``verifiers`` and defines a top-level ``load_environment``;
* ``ors``: a top-level class deriving from the Open Reward Standard ``Environment``
  (imported from ``openreward``/``ors``/``openrewardstandard`` and their ``environment(s)`` modules).
"""

from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SOURCE_TYPES",
    "DetectedEnvironment",
    "DetectionError",
    "detect",
    "iter_python_files",
    "module_path",
    "select",
]

SOURCE_TYPES = ("ors", "verifiers")  # the order 0.10 tries them in

_SKIP_DIRS = {".git", ".hg", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".venv", "__pycache__",
              "build", "dist", "node_modules", "venv"}  # fmt: skip
_SKIP_SUFFIXES = {".dll", ".dylib", ".key", ".p12", ".pfx", ".pem", ".pyd", ".pyc", ".pyo", ".so"}
_SKIP_NAMES = {".env", ".netrc", "credentials.json", "secrets.json", "secrets.toml", "secrets.yaml", "secrets.yml"}
_SKIP_PATTERNS = (".env.*", "*_secret.*", "*_secrets.*", "id_ed25519*", "id_rsa*")

ORS_MODULES = frozenset({
    "ors", "ors.environment", "openreward", "openreward.environment", "openreward.environments",
    "openreward.environments.environment", "openrewardstandard", "openrewardstandard.environment",
})  # fmt: skip
ORS_DISTRIBUTIONS = {"openreward": "openreward", "openrewardstandard": "openrewardstandard", "ors": "ors"}


class DetectionError(ValueError):
    """Nothing (or more than one thing) importable was found; the message says what was looked for."""


@dataclass(frozen=True)
class DetectedEnvironment:
    """An environment entry point found in a source tree."""

    source_type: str
    class_name: str
    module_path: str
    file_path: Path

    @property
    def qualified_name(self) -> str:
        return f"{self.module_path}:{self.class_name}"


def excluded(rel: Path) -> bool:
    """Whether a path (relative to the source root) is left out of detection and of the vendored copy."""
    if any(part in _SKIP_DIRS for part in rel.parts):
        return True
    name = rel.name
    return (name in _SKIP_NAMES or rel.suffix in _SKIP_SUFFIXES
            or any(fnmatch.fnmatch(name, p) for p in _SKIP_PATTERNS))  # fmt: skip


def iter_python_files(source: Path) -> list[Path]:
    return [p for p in sorted(source.rglob("*.py")) if not excluded(p.relative_to(source))]


def module_path(source: Path, file: Path) -> str:
    parts = list(file.relative_to(source).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _parse(file: Path) -> ast.Module | None:
    try:
        return ast.parse(file.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None


def _uses_verifiers(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "verifiers" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "verifiers" and node.level == 0:
            return True
    return False


def _verifiers(source: Path, file: Path, tree: ast.Module) -> list[DetectedEnvironment]:
    if not _uses_verifiers(tree):
        return []
    return [DetectedEnvironment("verifiers", node.name, module_path(source, file), file)
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "load_environment"]  # fmt: skip


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    if isinstance(node, ast.Subscript):  # Environment[...] generics
        return _dotted(node.value)
    return None


def _ors_names(tree: ast.AST) -> set[str]:
    """Every dotted name under which this module can refer to the ORS ``Environment`` base."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "") in ORS_MODULES:
            names.update(a.asname or a.name for a in node.names if a.name == "Environment")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name not in ORS_MODULES:
                    continue
                bound = a.asname or a.name.split(".")[0]
                full = a.asname or a.name
                names.update({f"{bound}.Environment", f"{bound}.environment.Environment",
                              f"{bound}.environments.Environment", f"{full}.Environment"})  # fmt: skip
    return names


def _ors(source: Path, file: Path, tree: ast.Module) -> list[DetectedEnvironment]:
    names = _ors_names(tree)
    if not names:
        return []
    return [DetectedEnvironment("ors", node.name, module_path(source, file), file)
            for node in tree.body
            if isinstance(node, ast.ClassDef) and any(_dotted(b) in names for b in node.bases)]  # fmt: skip


_DETECTORS = {"ors": _ors, "verifiers": _verifiers}
LOOKED_FOR = {
    "verifiers": "a module importing verifiers with a top-level load_environment()",
    "ors": "a class deriving from the Open Reward Standard Environment (openreward/ors)",
}


def detect(source: Path, source_type: str | None = None) -> list[DetectedEnvironment]:
    """All entry points in ``source`` (of ``source_type`` only, when given), without importing anything."""
    if source_type is not None and source_type not in _DETECTORS:
        raise DetectionError(f"Unsupported source type {source_type!r}. Supported: {', '.join(SOURCE_TYPES)}")
    kinds = [source_type] if source_type else list(SOURCE_TYPES)
    source = source.resolve()
    found: list[DetectedEnvironment] = []
    for kind in kinds:
        for file in iter_python_files(source):
            tree = _parse(file)
            if tree is not None:
                found.extend(_DETECTORS[kind](source, file, tree))
    return found


def select(source: Path, source_type: str | None = None, env_class: str | None = None) -> DetectedEnvironment:
    """The one entry point to import; ``DetectionError`` naming what was looked for otherwise."""
    matches = detect(source, source_type)
    if not matches:
        kinds = [source_type] if source_type else list(SOURCE_TYPES)
        wanted = "; ".join(f"{k}: {LOOKED_FOR[k]}" for k in kinds)
        raise DetectionError(f"No supported environment found in {source}. Supported source types: "
                             f"{', '.join(kinds)}. Looked for {wanted}.")  # fmt: skip
    if env_class:
        matches = [m for m in matches if env_class in (m.class_name, m.qualified_name)]
        if not matches:
            raise DetectionError(f"No detected environment matched {env_class!r}.")
    kinds_found = {m.source_type for m in matches}
    if source_type is None and len(kinds_found) > 1:
        raise DetectionError(f"Multiple source formats were detected. Re-run with --type ({'/'.join(sorted(kinds_found))}).")
    if len(matches) > 1:
        choices = ", ".join(m.qualified_name for m in matches)
        raise DetectionError(f"Multiple environment entrypoints were detected ({choices}). Re-run with --env-class.")
    return matches[0]


def ors_dependencies(source: Path) -> list[str]:
    """The ORS distributions the source imports and does not ship itself."""
    roots: set[str] = set()
    for file in iter_python_files(source.resolve()):
        tree = _parse(file)
        if tree is None:
            continue
        for node in ast.walk(tree):
            mods = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            roots.update(m.split(".")[0] for m in mods if m in ORS_MODULES)
    return [ORS_DISTRIBUTIONS[r] for r in sorted(roots)
            if r in ORS_DISTRIBUTIONS and not (source / r).exists() and not (source / f"{r}.py").exists()]  # fmt: skip
