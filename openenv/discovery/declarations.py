"""What an environment declares about itself, read from its committed files: ``openenv.yaml``,
``pyproject.toml``'s ``[project]``, the README's YAML frontmatter and an optional ``discovery.json``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import yaml
from pydantic import Field, field_validator

from openenv.discovery.errors import CatalogError
from openenv.discovery.gitsource import GitMetadata, MetadataError
from openenv.discovery.models import SIMULATION_CONTROLS, NonEmpty, Queries, RelativePath, StrictModel
from openenv.discovery.snapshot import parse_json

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["Declaration", "License", "declaration", "license_of", "openenv_requirement", "project_table",
           "readme_frontmatter", "yaml_mapping"]


class ToolsDeclaration(StrictModel):
    protocol: NonEmpty
    names: list[NonEmpty] = Field(min_length=1, max_length=256)
    source: RelativePath

    @field_validator("names")
    @classmethod
    def _task_tools(cls, names: list[str]) -> list[str]:
        if len(set(names)) != len(names):
            raise ValueError("tool declarations must not contain duplicate names")
        if any(n.casefold() in SIMULATION_CONTROLS for n in names):
            raise ValueError("simulation controls cannot be agent tools")
        return names


class Declaration(StrictModel):
    """``discovery.json``: what the author states for discovery (every key optional)."""

    description: NonEmpty | None = None
    tags: list[NonEmpty] = Field(default_factory=list)
    representative_queries: Queries = Field(default_factory=list)
    license: NonEmpty | None = None
    license_source: RelativePath | None = None
    artifact_availability: Literal["resolvable", "external", "unknown"] = "resolvable"
    agent_tools: ToolsDeclaration | None = None

    @field_validator("license")
    @classmethod
    def _license(cls, value: str | None) -> str | None:
        if value is None or value in ("unknown", "other"):
            return value
        from packaging.licenses import canonicalize_license_expression

        return str(canonicalize_license_expression(value))


class _UniqueKeys(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[str, Any]:
        if not isinstance(node, yaml.MappingNode):
            raise yaml.constructor.ConstructorError(None, None, "Expected mapping", node.start_mark)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str) or key in out:
                raise yaml.constructor.ConstructorError(None, None, "Mapping keys must be unique strings",
                                                        key_node.start_mark)  # fmt: skip
            out[key] = self.construct_object(value_node, deep=deep)
        return out


def yaml_mapping(text: str, path: str) -> dict[str, Any]:
    """A YAML mapping with unique string keys, or ``MetadataError``."""
    try:
        data = yaml.load(text, Loader=_UniqueKeys)  # noqa: S506 - a SafeLoader subclass
    except (yaml.YAMLError, RecursionError) as exc:
        raise MetadataError("invalid_metadata", f"Invalid YAML metadata: {path}") from exc
    if not isinstance(data, dict):
        raise MetadataError("invalid_metadata", f"Metadata must be a mapping: {path}")
    return data


def project_table(source: GitMetadata, path: str) -> dict[str, Any]:
    """``[project]`` of a ``pyproject.toml`` (``{}`` when the file is absent)."""
    text = source.read(path)
    if text is None:
        return {}
    try:
        project = tomllib.loads(text).get("project", {})
    except tomllib.TOMLDecodeError as exc:
        raise MetadataError("invalid_metadata", f"Invalid package metadata: {path}") from exc
    if not isinstance(project, dict):
        raise MetadataError("invalid_metadata", f"Project metadata must be a mapping: {path}")
    return project


def readme_frontmatter(source: GitMetadata, path: str) -> dict[str, Any]:
    """The YAML frontmatter of a README (``{}`` without one)."""
    text = source.read(path)
    if text is None or not text.startswith(("---\n", "---\r")):
        return {}
    lines = text.splitlines()
    if "---" not in lines[1:]:
        raise MetadataError("invalid_metadata", f"Unclosed README frontmatter: {path}")
    return yaml_mapping("\n".join(lines[1:lines.index("---", 1)]), path)


def declaration(source: GitMetadata, path: str) -> Declaration:
    """``discovery.json`` (defaults when absent)."""
    text = source.read(path)
    if text is None:
        return Declaration()
    try:
        raw = parse_json(text)
    except CatalogError as exc:
        raise MetadataError("invalid_metadata", f"Invalid discovery declaration: {path}") from exc
    return Declaration.model_validate(raw)


@dataclass(frozen=True)
class License:
    expression: str  # SPDX expression, "other" or "unknown"
    text: str | None = None  # the declared text of an "other" license


def license_of(value: object) -> License | None:
    """A license declaration (PEP 639 string, or ``{text|file}`` table) as an SPDX expression."""
    if value is None:
        return None
    if isinstance(value, dict):
        if "file" in value and "text" in value:
            raise MetadataError("invalid_metadata", "License file and text declarations are mutually exclusive")
        value = value.get("text")
        if value is None:  # a file alone names no license
            return License("unknown")
    if not isinstance(value, str) or not value.strip():
        return License("unknown")
    value = value.strip()
    if value in ("unknown", "other"):
        return License(value)
    from packaging.licenses import InvalidLicenseExpression, canonicalize_license_expression

    try:
        return License(str(canonicalize_license_expression(value)))
    except InvalidLicenseExpression:
        return License("other", value.replace("\r\n", "\n").replace("\r", "\n"))


def openenv_requirement(project: dict[str, Any]) -> str | None:
    """The one dependency on ``openenv`` in ``[project] dependencies``, if any."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    dependencies = project.get("dependencies", [])
    if not isinstance(dependencies, list):
        raise MetadataError("invalid_metadata", "Package dependencies must be an array")
    found = []
    for dep in dependencies:
        if not isinstance(dep, str):
            raise MetadataError("invalid_metadata", "Dependency declarations must be strings")
        try:
            if canonicalize_name(Requirement(dep).name) == "openenv":
                found.append(dep)
        except InvalidRequirement as exc:
            raise MetadataError("invalid_metadata", "Invalid package dependency declaration") from exc
    if len(found) > 1:
        raise MetadataError("invalid_metadata", "Multiple OpenEnv requirements need an explicit resolution")
    return found[0] if found else None
