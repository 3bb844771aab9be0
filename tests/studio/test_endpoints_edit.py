"""Model endpoints on the "Run a model" page can be edited (also renamed) and deleted, with the
same validation as when they are saved."""

from __future__ import annotations

import json
from pathlib import Path

from tests.studio.conftest import StudioClient


def _save(sc: StudioClient, **fields: str):
    return sc.post("/models/endpoints", fields, htmx=False)


def _listed(sc: StudioClient) -> dict[str, str]:
    doc = sc.page("/models")
    return {li.attrs["data-endpoint"]: li.text() for li in doc.find_all("li") if "data-endpoint" in li.attrs}


def test_edit_rename_and_delete_an_endpoint(sc: StudioClient, studio_data: Path) -> None:
    base = {"base_url": "http://127.0.0.1:9/v1", "model": "m1"}
    assert _save(sc, name="edit-me", temperature="0.5", api_key="sk-typed-edit", **base).status_code == 303
    assert _save(sc, name="other-one", **base).status_code == 303
    again = _save(sc, name="other-one", **{**base, "model": "overwrite?"})  # a new endpoint, not an edit
    assert again.status_code == 422 and "exists already" in again.text and "overwrite?" not in _listed(sc)["other-one"]
    form = sc.page("/models", params={"edit": "edit-me"}).by_id("endpoint-form")
    assert form.find("input", id="ep-temp").attrs["value"] == "0.5"
    assert form.find("input", name="original_name").attrs["value"] == "edit-me"
    assert "Edit" in form.find("h3").text() and form.find("button", id="endpoint-save").text() == "Save changes"

    bad = _save(sc, name="edit-me", original_name="edit-me", temperature="99", max_tokens="-3", **base)
    assert bad.status_code == 422
    from tests.studio.html import page

    doc = page(bad.text)
    assert "temperature must be between" in doc.by_id("ep-temp-error").text()
    assert "max tokens must be between" in doc.by_id("ep-max-tokens-error").text()
    assert doc.find("input", name="original_name").attrs["value"] == "edit-me"  # still editing it
    taken = _save(sc, name="other-one", original_name="edit-me", **base)
    assert taken.status_code == 422 and "exists already" in taken.text

    ok = _save(sc, name="edited", original_name="edit-me", temperature="0.9", **{**base, "model": "m2"})
    assert ok.status_code == 303
    listed = _listed(sc)
    assert "edit-me" not in listed and "m2" in listed["edited"] and "temperature 0.9" in listed["edited"]
    assert "typed (kept in memory)" in listed["edited"]  # the typed key followed the rename
    saved = json.loads((studio_data / "model_endpoints.json").read_text())
    assert [e["name"] for e in saved if e["name"] in ("edited", "other-one")] == ["edited", "other-one"]

    assert sc.post("/models/endpoints/delete", {"name": "edited"}, htmx=False).status_code == 303
    assert _save(sc, name="by-htmx", **base).status_code == 303
    resp = sc.post("/models/endpoints/delete", {"name": "by-htmx"})  # the page's button (hx-post)
    assert resp.status_code == 200 and resp.headers["HX-Redirect"] == "/models" and "by-htmx" not in _listed(sc)
    assert "edited" not in _listed(sc) and "other-one" in _listed(sc)
    assert all(e["name"] != "edited" for e in json.loads((studio_data / "model_endpoints.json").read_text()))
    assert sc.post("/models/endpoints/delete", {"name": "edited"}, htmx=False).status_code == 404
    assert sc.page("/models", status=404, params={"edit": "no-such"}) is not None
    gone = _save(sc, name="x2", original_name="no-such", **base)
    assert gone.status_code == 422 and "no saved model endpoint" in gone.text
