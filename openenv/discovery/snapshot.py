"""Reading and writing catalog snapshots: strict JSON (no duplicate keys, no NaN), a size bound,
the ``sha256:`` digest over the canonical JSON, and atomic writes."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from openenv.discovery.errors import CatalogError
from openenv.discovery.models import MAX_CATALOG_BYTES, CatalogSnapshot

__all__ = ["catalog_digest", "load_catalog", "parse_json", "require_complete", "write_catalog"]


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise CatalogError("JSON contains duplicate object keys")
        out[key] = value
    return out


def _no_constants(_name: str) -> None:
    raise CatalogError("JSON contains a non-finite number")


def parse_json(text: str) -> Any:
    """``json.loads`` that refuses duplicate keys and ``NaN``/``Infinity``."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise CatalogError("Invalid catalog JSON") from exc


def _dump(snapshot: CatalogSnapshot, **exclude: Any) -> dict[str, Any]:
    return snapshot.model_dump(by_alias=True, exclude_none=True, mode="json", **exclude)


def catalog_digest(snapshot: CatalogSnapshot) -> str:
    """``sha256:`` of the snapshot without its digest, as compact sorted UTF-8 JSON."""
    body = json.dumps(_dump(snapshot, exclude={"digest"}), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False)  # fmt: skip
    return "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()


def require_complete(snapshot: CatalogSnapshot) -> None:
    """A consumer uses only complete snapshots whose content matches their digest."""
    if not snapshot.complete:
        raise CatalogError("The configured catalog is incomplete")
    if catalog_digest(snapshot) != snapshot.digest:
        raise CatalogError("Catalog content does not match its snapshot digest")


def load_catalog(path: str | Path) -> CatalogSnapshot:
    """One complete local snapshot; nothing it references is fetched."""
    try:
        with Path(path).open("rb") as fh:
            raw = fh.read(MAX_CATALOG_BYTES + 1)
    except OSError as exc:
        raise CatalogError("Cannot read the configured catalog") from exc
    if len(raw) > MAX_CATALOG_BYTES:
        raise CatalogError("Catalog exceeds the metadata size limit")
    try:
        snapshot = CatalogSnapshot.model_validate(parse_json(raw.decode("utf-8")))
    except (UnicodeDecodeError, ValidationError) as exc:
        raise CatalogError("Catalog does not match the supported profile") from exc
    require_complete(snapshot)
    return snapshot


def write_catalog(snapshot: CatalogSnapshot, path: str | Path) -> None:
    """Write ``snapshot`` (incomplete ones too: they are build reports) atomically, sorted and indented."""
    if catalog_digest(snapshot) != snapshot.digest:
        raise CatalogError("Cannot write a catalog with an invalid digest")
    text = json.dumps(_dump(snapshot), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    if len(text.encode("utf-8")) > MAX_CATALOG_BYTES:
        raise CatalogError("Catalog exceeds the metadata size limit")
    target = Path(path)
    tmp: Path | None = None
    try:
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=target.parent, delete=False) as out:
            tmp = Path(out.name)
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(target)
        tmp = None
    except OSError as exc:
        raise CatalogError("Cannot write the catalog snapshot") from exc
    finally:
        if tmp is not None and tmp.exists():
            tmp.unlink()
