"""Asset locations, content-hashed URLs and static serving."""

from __future__ import annotations

from pathlib import Path

from webui import assets

ROOT = Path(__file__).resolve().parents[2]


def test_source_checkout_uses_top_level_dirs() -> None:
    assert assets.templates_dir() == ROOT / "templates"
    assert assets.static_dir() == ROOT / "static"
    assert (assets.static_dir() / assets.HTMX_FILE).is_file()


def test_vendored_htmx_has_licence_and_readme() -> None:
    vendor = assets.static_dir() / "vendor"
    version = assets.HTMX_FILE.split("htmx-")[1].removesuffix(".min.js")
    assert (vendor / "htmx-LICENSE").read_text().startswith("Zero-Clause BSD")
    assert version in (vendor / "README.md").read_text()


def test_content_hash_and_responses() -> None:
    digest = assets.content_hash("webui.css")
    assert len(digest) == 12
    assert assets.content_hash("nope.css") == ""
    ok = assets.static_response("webui.css", digest)
    assert ok.status_code == 200 and "immutable" in ok.headers["cache-control"]
    assert ok.headers["content-type"].startswith("text/css")
    assert assets.static_response("webui.css", "stale").headers["cache-control"] == "no-cache"
    for bad in ("../pyproject.toml", "/etc/passwd", "vendor/../../README.md", "vendor"):
        assert assets.static_response(bad, None).status_code == 404
