"""Metadata read from one commit of a local Git repository (``git ls-tree``/``cat-file``): never
the working tree, never an import of the environments' code. Every read is bounded in size and time."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from urllib.parse import quote

from openenv.discovery.errors import CatalogError
from openenv.discovery.models import github_repository, relative_path

__all__ = ["GitMetadata", "MetadataError"]

MAX_FILE_BYTES = 1024 * 1024
MAX_TREE_BYTES = 16 * 1024 * 1024
MAX_ENVIRONMENTS = 10_000
GIT_TIMEOUT_S = 30


class MetadataError(CatalogError):
    """One environment's metadata is unusable; ``code`` goes into the snapshot's issue."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class GitMetadata:
    """The tracked files of ``repository`` at ``revision``; environments are the direct children of
    ``root`` holding an ``openenv.yaml``."""

    def __init__(self, repository: Path, repository_uri: str, revision: str, root: str) -> None:
        try:
            self.repository_id = github_repository(repository_uri)
            self.root = relative_path(root)
        except ValueError as exc:
            raise CatalogError(str(exc)) from exc
        self.repository, self.uri = repository, repository_uri
        spec = ["rev-parse", "--verify", "--end-of-options", f"{revision}^{{commit}}"]
        self.revision = self._git(spec, 256).decode("ascii").strip()
        self.files: dict[str, tuple[str, str]] = {}  # path -> (mode, blob id)
        for row in self._git(["ls-tree", "-r", "-z", self.revision], MAX_TREE_BYTES).split(b"\0"):
            if not row:
                continue
            info, name = row.split(b"\t", 1)
            mode, kind, oid = info.decode("ascii").split()
            if kind != "blob":
                continue
            try:
                self.files[name.decode("utf-8")] = (mode, oid)
            except UnicodeDecodeError as exc:
                raise CatalogError("Repository metadata paths must be UTF-8") from exc
        prefix = "" if self.root == "." else self.root + "/"
        if not any(p.startswith(prefix) for p in self.files):
            raise CatalogError("The configured inventory root does not exist")
        self.environments = sorted(p.rsplit("/", 1)[0] for p in self.files
                                   if p.startswith(prefix) and p.endswith("/openenv.yaml")
                                   and p[len(prefix):].count("/") == 1)  # fmt: skip
        if len(self.environments) > MAX_ENVIRONMENTS:
            raise CatalogError("Repository inventory exceeds the environment limit")

    def _git(self, args: list[str], limit: int) -> bytes:
        env = dict(os.environ, GIT_NO_REPLACE_OBJECTS="1", GIT_NO_LAZY_FETCH="1", GIT_TERMINAL_PROMPT="0")
        try:
            done = subprocess.run(["git", "--no-pager", "-C", str(self.repository), *args], capture_output=True,
                                  env=env, timeout=GIT_TIMEOUT_S, check=False)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CatalogError("Cannot read the configured Git revision") from exc
        if done.returncode != 0:
            raise CatalogError("Cannot read the configured Git revision")
        if len(done.stdout) > limit:
            raise CatalogError("Git metadata exceeds the configured size limit")
        return done.stdout

    def read(self, path: str, *, required: bool = False) -> str | None:
        """The text of a tracked regular file, ``None`` if absent (``MetadataError`` if ``required``)."""
        relative_path(path)
        found = self.files.get(path)
        if found is None:
            if required:
                raise MetadataError("missing_metadata", f"Required metadata is absent: {path}")
            return None
        mode, oid = found
        if mode == "120000":
            raise MetadataError("symlink_metadata", f"Metadata must be a regular tracked file: {path}")
        if int(self._git(["cat-file", "-s", oid], 32).decode("ascii")) > MAX_FILE_BYTES:
            raise MetadataError("metadata_limit", f"Metadata file is too large: {path}")
        try:
            return self._git(["cat-file", "blob", oid], MAX_FILE_BYTES).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MetadataError("invalid_metadata", f"Metadata is not UTF-8: {path}") from exc

    def url(self, path: str) -> str:
        """Where ``path`` at this revision is shown on GitHub."""
        relative_path(path)
        return f"https://github.com/{self.repository_id}/blob/{self.revision}/{quote(path, safe='/')}"
