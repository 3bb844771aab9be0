"""``build_catalog``: a snapshot of every environment under one root of a repository revision,
from committed metadata only. An environment whose metadata is unusable becomes an error issue
(and the snapshot is then incomplete); the others become entries."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from openenv.discovery.declarations import (
    Declaration,
    declaration,
    license_of,
    openenv_requirement,
    project_table,
    readme_frontmatter,
    yaml_mapping,
)
from openenv.discovery.errors import CatalogError
from openenv.discovery.gitsource import GitMetadata, MetadataError
from openenv.discovery.models import (
    PROFILE_VERSION,
    AgentToolsInterface,
    CatalogIssue,
    CatalogSnapshot,
    DiscoveryEntry,
    EnvironmentCard,
    EnvironmentSource,
    GitArtifact,
    Inventory,
    OrchestrationInterface,
    Owner,
    Publisher,
    RepositorySource,
)
from openenv.discovery.snapshot import catalog_digest

__all__ = ["build_catalog"]


def _first(sources: list[tuple[dict[str, Any], str]], key: str) -> tuple[Any, str | None]:
    """The first source declaring ``key`` and where (``file#key`` or ``file#table.key``)."""
    for data, origin in sources:
        if data.get(key) is not None:
            return data[key], f"{origin}{'.' if '#' in origin else '#'}{key}"
    return None, None


def _license(source: GitMetadata, path: str, declared: Declaration, project: dict[str, Any],
             readme: dict[str, Any], root_project: dict[str, Any]) -> tuple[str, str | None, str | None, list]:
    """(expression, url, origin, warnings): discovery.json, else the env's pyproject/README, else the repo's."""
    if declared.license is not None:
        origin = declared.license_source or f"{path}/discovery.json"
        source.read(origin, required=True)
        return declared.license, None if declared.license == "unknown" else source.url(origin), origin, []
    known = [(parsed, origin) for parsed, origin in ((license_of(project.get("license")), f"{path}/pyproject.toml"),
                                                     (license_of(readme.get("license")), f"{path}/README.md"))
             if parsed is not None]  # fmt: skip
    conflict = len({parsed for parsed, _ in known}) > 1 or (
        len(known) > 1 and known[0][0].expression == "other" and known[0][0].text is None)
    if conflict:
        issue = CatalogIssue(path=path, code="license_conflict", severity="warning",
                             message="Package and README declarations do not identify one license")
        return "unknown", None, None, [issue]
    if known:
        parsed, origin = known[0]
        return parsed.expression, None if parsed.expression == "unknown" else source.url(origin), origin, []
    parsed = license_of(root_project.get("license"))
    if parsed is None:
        return "unknown", None, None, []
    origin = "pyproject.toml"
    for name in root_project.get("license-files", []):
        if isinstance(name, str) and name in source.files:
            source.read(name, required=True)
            origin = name
            break
    return parsed.expression, None if parsed.expression == "unknown" else source.url(origin), origin, []


def _entry(source: GitMetadata, path: str, publisher: str, namespace: str,
           root_project: dict[str, Any]) -> tuple[DiscoveryEntry, list[CatalogIssue]]:
    manifest_path, project_path = f"{path}/openenv.yaml", f"{path}/pyproject.toml"
    readme_path, declaration_path = f"{path}/README.md", f"{path}/discovery.json"
    manifest = yaml_mapping(source.read(manifest_path, required=True) or "", manifest_path)
    project = project_table(source, project_path)
    readme = readme_frontmatter(source, readme_path)
    declared = declaration(source, declaration_path)
    name, name_origin = _first([(manifest, manifest_path), (project, project_path + "#project")], "name")
    description, description_origin = _first(
        [(declared.model_dump(exclude_none=True), declaration_path), (manifest, manifest_path),
         (project, project_path + "#project"), (readme, readme_path)], "description")  # fmt: skip
    if not isinstance(name, str) or not name.strip():
        raise MetadataError("invalid_metadata", "Environment needs a declared name")
    if not isinstance(description, str) or not description.strip():
        raise MetadataError("invalid_metadata", "Environment needs an authored task description")
    license_name, license_url, license_origin, warnings = _license(source, path, declared, project, readme,
                                                                   root_project)  # fmt: skip
    provenance: dict[str, Any] = {"name": name_origin, "description": description_origin, "source": source.uri}
    if license_origin is not None:
        provenance["license"] = license_origin
    where = {"uri": source.uri, "path": path, "revision": source.revision}
    interfaces: list[Any] = [OrchestrationInterface(role="orchestration", protocol="openenv")]
    capabilities: list[str] = []
    if (tools := declared.agent_tools) is not None:
        if not tools.source.startswith(path + "/"):
            raise MetadataError("invalid_metadata", "Agent-tool evidence must belong to the environment")
        source.read(tools.source, required=True)
        interfaces.append(AgentToolsInterface(role="agent-tools", protocol=tools.protocol, status="declared",
                                              source_revision=source.revision))  # fmt: skip
        capabilities = list(tools.names)
        provenance["agent_tools"] = tools.source
    tags = declared.tags or readme.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise MetadataError("invalid_metadata", "Tags must be an array of strings")
    requirement = openenv_requirement(project)
    if requirement is not None:
        provenance["framework_requirement"] = project_path + "#project.dependencies"
    if "spec_version" in manifest:
        provenance["manifest_spec_version"] = manifest_path + "#spec_version"
    card = EnvironmentCard(
        schema_version=PROFILE_VERSION, name=name, description=description,
        owner=Owner(authority="github.com", id=source.repository_id.split("/", 1)[0]),
        source=EnvironmentSource(provider="github", id=source.repository_id, **where),
        artifact_availability=declared.artifact_availability,
        artifacts=[GitArtifact(kind="git", **where)] if declared.artifact_availability == "resolvable" else [],
        license=license_name, license_url=license_url, interfaces=interfaces,
        manifest_spec_version=manifest.get("spec_version"), framework_requirement=requirement,
    )  # fmt: skip
    locator = hashlib.sha256(f"{source.uri}\n{path}".encode()).hexdigest()
    entry = DiscoveryEntry(
        identifier=f"urn:air:{publisher}:{namespace}:{locator}:{source.revision}", display_name=name,
        description=description, data=card, tags=sorted(set(tags)), capabilities=capabilities,
        representative_queries=list(declared.representative_queries), metadata={"provenance": provenance},
    )  # fmt: skip
    return entry, warnings


def build_catalog(repository: str | Path, *, repository_uri: str, publisher: str, namespace: str = "openenv",
                  revision: str = "HEAD", root: str = "envs") -> CatalogSnapshot:
    """The snapshot of ``root``'s direct-child environments at ``revision`` of a local Git repository.

    Args:
        repository: the local repository (its code is never imported; uncommitted files are not read).
        repository_uri: its public ``https://github.com/<owner>/<repo>.git`` URI.
        publisher: the publishing authority, a DNS name (a declaration, not verified).
        namespace: the publisher's discovery namespace.
        revision: commit or ref, resolved once.
        root: the directory whose children hold ``openenv.yaml``.
    """
    try:
        TypeAdapter(Publisher).validate_python(publisher)
    except ValidationError as exc:
        raise CatalogError("publisher must be an explicit DNS authority") from exc
    if not re.fullmatch(r"[A-Za-z0-9._-]+", namespace):
        raise CatalogError("namespace must be a non-empty ARD name component")
    source = GitMetadata(Path(repository), repository_uri, revision, root)
    root_project = project_table(source, "pyproject.toml")
    entries: list[DiscoveryEntry] = []
    issues: list[CatalogIssue] = []
    for path in source.environments:
        try:
            entry, warnings = _entry(source, path, publisher, namespace, root_project)
        except MetadataError as exc:
            issues.append(CatalogIssue(path=path, code=exc.code, message=str(exc), severity="error"))
        except ValidationError:
            issues.append(CatalogIssue(path=path, code="invalid_metadata", severity="error",
                                       message="Metadata does not satisfy the declaration profile"))
        else:
            entries.append(entry)
            issues.extend(warnings)
    draft = CatalogSnapshot(
        publisher=publisher,
        source=RepositorySource(provider="github", id=source.repository_id, uri=source.uri, revision=source.revision),
        inventory=Inventory(root=source.root, paths=source.environments), entries=entries, issues=issues,
        complete=not any(i.severity == "error" for i in issues), digest="sha256:" + "0" * 64,
    )  # fmt: skip
    return draft.model_copy(update={"digest": catalog_digest(draft)})
