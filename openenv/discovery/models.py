"""The metadata-only catalog format of the published openenv 0.10 (profile ``0.1-draft``): an
Environment Card per environment, wrapped in an ARD discovery entry, in a repository snapshot.

The models check what a consumer must be able to trust: immutable revisions, repository-relative
paths, one orchestration interface, identifiers bound to the revision, and an inventory that
accounts for every environment found.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    model_validator,
)

__all__ = [
    "ARD_CONTEXT",
    "ENVIRONMENT_MEDIA_TYPE",
    "MAX_CATALOG_BYTES",
    "PROFILE_VERSION",
    "AgentToolsInterface",
    "CatalogChanges",
    "CatalogIssue",
    "CatalogSnapshot",
    "DiscoveryEntry",
    "EnvironmentCard",
    "EnvironmentSource",
    "GitArtifact",
    "Inventory",
    "OrchestrationInterface",
    "Owner",
    "RepositorySource",
    "SearchMatch",
    "SupersededEntry",
    "github_repository",
    "relative_path",
]

PROFILE_VERSION = "0.1-draft"
ENVIRONMENT_MEDIA_TYPE = "application/vnd.openenv.environment-card+json"
ARD_CONTEXT = "https://agenticresourcediscovery.org/context/v1"
SIMULATION_CONTROLS = frozenset({"reset", "step", "state", "get_state"})
MAX_CATALOG_BYTES = 16 * 1024 * 1024
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def relative_path(value: str) -> str:
    """A normalized repository-relative POSIX path (``.`` for the root), never resolved."""
    bad = (not value or _CONTROL.search(value) or "\\" in value or value.startswith("/")
           or any(part in ("", ".", "..") for part in value.split("/")))  # fmt: skip
    if value != "." and bad:
        raise ValueError("path must be a normalized repository-relative POSIX path")
    return value


def github_repository(uri: str) -> str:
    """``owner/repo`` of a credential-free ``https://github.com/owner/repo.git``."""
    parts = urlsplit(uri)
    if (parts.scheme != "https" or parts.netloc.lower() != "github.com" or parts.query or parts.fragment
            or "%" in parts.path or not parts.path.endswith(".git")):  # fmt: skip
        raise ValueError("repository_uri must be a credential-free GitHub HTTPS Git URI")
    identity = parts.path[1:-4]
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", identity):
        raise ValueError("repository_uri must identify an owner and repository")
    if any(part in (".", "..") for part in identity.split("/")):
        raise ValueError("repository_uri contains an invalid repository component")
    return identity


def _https_reference(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.hostname or parts.username is not None or parts.password is not None \
            or "\\" in parts.netloc:  # fmt: skip
        raise ValueError("metadata references must be credential-free HTTPS URLs")
    return value


def _canonical_license(value: str) -> str:
    if value in ("other", "unknown"):
        return value
    from packaging.licenses import canonicalize_license_expression

    return str(canonicalize_license_expression(value))


NonEmpty = Annotated[str, StringConstraints(min_length=1, max_length=8192, pattern=r"\S")]
Revision = Annotated[str, StringConstraints(pattern=r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")]
RelativePath = Annotated[NonEmpty, AfterValidator(relative_path)]
HttpsReference = Annotated[NonEmpty, AfterValidator(_https_reference)]
License = Annotated[NonEmpty, AfterValidator(_canonical_license)]
Publisher = Annotated[str, StringConstraints(
    min_length=3, max_length=253, pattern=r"^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]{2,63}$")]
Queries = Annotated[list[NonEmpty], Field(max_length=0)] | Annotated[list[NonEmpty], Field(min_length=2, max_length=5)]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True, allow_inf_nan=False)


class Owner(StrictModel):
    """Who declares the source (a declaration, not verified ownership)."""

    authority: NonEmpty
    id: NonEmpty


class RepositorySource(StrictModel):
    provider: Literal["github"]
    id: NonEmpty
    uri: NonEmpty
    revision: Revision

    @model_validator(mode="after")
    def _id_matches_uri(self) -> RepositorySource:
        if github_repository(self.uri) != self.id:
            raise ValueError("source.id must match the repository URI")
        return self


class EnvironmentSource(RepositorySource):
    path: RelativePath


class GitArtifact(StrictModel):
    kind: Literal["git"]
    uri: NonEmpty
    path: RelativePath
    revision: Revision


class OrchestrationInterface(StrictModel):
    role: Literal["orchestration"]
    protocol: Literal["openenv"]


class AgentToolsInterface(StrictModel):
    role: Literal["agent-tools"]
    protocol: NonEmpty
    status: Literal["declared"]
    source_revision: Revision


Interface = Annotated[OrchestrationInterface | AgentToolsInterface, Field(discriminator="role")]


class EnvironmentCard(StrictModel):
    """One environment at one source revision: what it is, where it is, under which license."""

    schema_version: Literal["0.1-draft"]
    name: NonEmpty
    description: NonEmpty
    owner: Owner | Literal["unknown"]
    source: EnvironmentSource
    artifact_availability: Literal["resolvable", "external", "unknown"]
    artifacts: list[GitArtifact] = Field(default_factory=list)
    license: License
    license_url: HttpsReference | None = None
    interfaces: list[Interface]
    manifest_spec_version: int | str | None = None
    framework_requirement: NonEmpty | None = None

    @model_validator(mode="after")
    def _claims(self) -> EnvironmentCard:
        if (self.artifact_availability == "resolvable") != bool(self.artifacts):
            raise ValueError("resolvable records need an immutable artifact; others must not claim one")
        subject = (self.source.uri, self.source.path, self.source.revision)
        if any((a.uri, a.path, a.revision) != subject for a in self.artifacts):
            raise ValueError("artifact does not identify the card's source subject")
        if self.license == "other" and self.license_url is None:
            raise ValueError("an other license requires an authoritative reference")
        if sum(1 for i in self.interfaces if i.role == "orchestration") != 1:
            raise ValueError("exactly one orchestration descriptor is required")
        tools = [i for i in self.interfaces if isinstance(i, AgentToolsInterface)]
        if any(t.source_revision != self.source.revision for t in tools):
            raise ValueError("tool declaration must match source revision")
        if len({t.protocol for t in tools}) != len(tools):
            raise ValueError("duplicate agent-tools protocol declaration")
        if self.framework_requirement is not None:
            from packaging.requirements import Requirement
            from packaging.utils import canonicalize_name

            if canonicalize_name(Requirement(self.framework_requirement).name) != "openenv":
                raise ValueError("framework_requirement must declare the openenv package")
        return self


class DiscoveryEntry(StrictModel):
    """The ARD record around a card; its identifier ends with the card's source revision."""

    context: Literal["https://agenticresourcediscovery.org/context/v1"] = Field(default=ARD_CONTEXT, alias="@context")
    identifier: NonEmpty
    display_name: NonEmpty = Field(alias="displayName")
    type: Literal["application/vnd.openenv.environment-card+json"] = ENVIRONMENT_MEDIA_TYPE
    data: EnvironmentCard
    description: NonEmpty
    tags: list[NonEmpty] = Field(default_factory=list)
    capabilities: list[NonEmpty] = Field(default_factory=list)
    representative_queries: Queries = Field(default_factory=list, alias="representativeQueries")
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _bound_to_revision(self) -> DiscoveryEntry:
        if not (self.identifier.startswith("urn:air:") and self.identifier.endswith(":" + self.data.source.revision)):
            raise ValueError("identifier must name one immutable revision card")
        if any(name.casefold() in SIMULATION_CONTROLS for name in self.capabilities):
            raise ValueError("agent capabilities must not advertise simulation control")
        if self.capabilities and not any(i.role == "agent-tools" for i in self.data.interfaces):
            raise ValueError("capabilities require an evidenced agent-tools declaration")
        return self


class Inventory(StrictModel):
    root: RelativePath
    paths: list[RelativePath]

    @model_validator(mode="after")
    def _direct_children(self) -> Inventory:
        parent = "" if self.root == "." else self.root
        if any(p == "." or p.rpartition("/")[0] != parent for p in self.paths):
            raise ValueError("inventory paths must be direct children of its declared root")
        return self


class CatalogIssue(StrictModel):
    path: RelativePath
    code: NonEmpty
    message: NonEmpty
    severity: Literal["warning", "error"]


class Generator(StrictModel):
    name: Literal["openenv-git-catalog"] = "openenv-git-catalog"
    version: Literal["1"] = "1"


class CatalogSnapshot(StrictModel):
    """Every environment under one inventory root of one repository revision, with a digest."""

    schema_version: Literal["0.1-draft"] = PROFILE_VERSION
    publisher: Publisher
    source: RepositorySource
    generator: Generator = Field(default_factory=Generator)
    inventory: Inventory
    entries: list[DiscoveryEntry]
    issues: list[CatalogIssue] = Field(default_factory=list)
    complete: bool
    digest: Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]

    @model_validator(mode="after")
    def _accounts_for_every_path(self) -> CatalogSnapshot:
        paths = self.inventory.paths
        if len(paths) != len(set(paths)):
            raise ValueError("inventory contains duplicate environment paths")
        repo = (self.source.id, self.source.uri, self.source.revision)
        described: list[str] = []
        for entry in self.entries:
            src = entry.data.source
            if (src.id, src.uri, src.revision) != repo:
                raise ValueError("entry source differs from the recorded inventory")
            if not entry.identifier.startswith(f"urn:air:{self.publisher}:"):
                raise ValueError("entry publisher differs from the snapshot publisher")
            described.append(src.path)
        if len({e.identifier for e in self.entries}) != len(self.entries):
            raise ValueError("duplicate revision-card identifier")
        if len(set(described)) != len(described):
            raise ValueError("multiple cards describe one environment path")
        failed = {i.path for i in self.issues if i.severity == "error"}
        if set(described) & failed or set(described) | failed != set(paths):
            raise ValueError("inventory must account for every eligible environment")
        if self.complete == bool(failed):
            raise ValueError("complete must reflect eligible-record failures")
        return self


class SearchMatch(StrictModel):
    entry: DiscoveryEntry
    score: Annotated[int, Field(ge=0, le=100)]


class SupersededEntry(StrictModel):
    previous: DiscoveryEntry
    current: DiscoveryEntry


class CatalogChanges(StrictModel):
    """Between two complete snapshots of one scope: paths added, withdrawn, moved to a new
    revision card (superseded), or the same card with changed content (corrected)."""

    added: list[DiscoveryEntry]
    withdrawn: list[DiscoveryEntry]
    superseded: list[SupersededEntry]
    corrected: list[SupersededEntry]
