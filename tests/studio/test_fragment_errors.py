"""One error contract for fragments: every POST route of the studio, sent oversized, out-of-range,
empty and garbage values, answers below 500, and any 4xx is a message (an htmx request's is a
fragment, never a whole page swapped into a panel)."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.studio.conftest import StudioClient
from tests.studio.html import page

BIG = "x" * (2 * 1024 * 1024)
VALUES = {"oversized": BIG, "out_of_range": str(2**70), "negative": "-3", "ninety_nine": "99", "empty": "",
          "garbage": "\x00<script>{]%%"}
GONE = "0" * 16  # an id nothing has

# route name -> (path, its form's fields, an htmx form?); ``{sid}``... are filled in per test
ROUTES: dict[str, tuple[str, tuple[str, ...], bool]] = {
    "launch": ("/envs/launch/{key}", ("provider", "port", "env_vars", "memory", "cpus", "pids_limit"), True),
    "runtime_stop": (f"/envs/r/{GONE}/stop", (), True),
    "runtime_restart": (f"/envs/r/{GONE}/restart", (), True),
    "catalogue_add": ("/envs/catalogue", ("target",), True),
    "catalogue_remove": (f"/envs/catalogue/{GONE}/remove", (), True),
    "attach": ("/envs/attach", ("url",), True),
    "web_step": ("/play/s/{sid}/step", ("mode", "a.message"), True),
    "web_reset": ("/play/s/{sid}/reset", ("r.seed", "r.episode_id"), True),
    "web_editor": ("/play/s/{sid}/editor", ("mode", "raw_json", "a.message"), True),
    "web_close": (f"/play/s/{GONE}/close", (), True),
    "web_mcp_call": ("/play/s/{sid}/mcp/call/0", ("t0.value",), True),
    "web_view_act": ("/play/s/{sid}/view/act/0", ("value",), True),
    "episode_rerun": ("/episodes/{eid}/rerun", ("runtime",), True),
    "episode_delete": (f"/episodes/{GONE}/delete", (), True),
    "episode_notes": ("/episodes/{eid}/notes", ("tags", "notes"), True),
    "episodes_delete": ("/episodes/delete", ("ids",), False),
    "episodes_export_job": ("/episodes/export/jobs", ("env", "min_length", "seed", "run"), False),
    "episode_fork": ("/episodes/{eid}/fork", ("step", "runtime"), True),
    "fork_proceed": ("/play/s/{sid}/fork/proceed", (), True),
    "fork_discard": (f"/play/s/{GONE}/fork/discard", (), True),
    "runtime_session_close": ("/envs/r/{rid}/sessions/{gone}/close", (), True),
    "models_endpoint_save": ("/models/endpoints", ("name", "base_url", "model", "api_key_env", "api_key",
                                                   "temperature", "max_tokens", "timeout_s", "original_name"), False),
    "models_endpoint_delete": ("/models/endpoints/delete", ("name",), False),
    "models_run_start": ("/models/runs", ("runtime", "endpoint", "episodes", "concurrency", "max_steps", "seed",
                                          "samples_per_seed", "label"), False),
    "models_run_cancel": (f"/models/runs/{GONE}/cancel", (), True),
    "play_model_start": ("/play/s/{sid}/model", ("endpoint", "steps"), True),
    "play_model_takeback": ("/play/s/{sid}/takeback", (), True),
    "play_open": ("/play/{rid}", ("session", "episode"), False),
    "play_end": (f"/play/s/{GONE}/end", (), True),
}


def post_routes(app_routes: list) -> set[str]:
    """Names of every route that takes a POST (included routers flattened)."""
    names: set[str] = set()
    for route in app_routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            names |= post_routes(inner.routes)
        elif "POST" in (getattr(route, "methods", None) or ()):
            names.add(route.name)
    return names


def assert_message(resp: httpx.Response, *, htmx: bool, what: str) -> None:
    """Below 500; a 4xx carries a visible message (an htmx one as a fragment)."""
    assert resp.status_code < 500, f"{what}: {resp.status_code} {resp.text[:300]}"
    if resp.status_code < 400:
        return
    body = resp.text
    assert re.search(r'role="alert"|field-errors', body), f"{what}: a {resp.status_code} without a message"
    if htmx:
        assert "<html" not in body.lower(), f"{what}: a whole page answered an htmx request"
        if resp.headers.get("X-Fragment-Error"):
            assert "fragment-error" in body and resp.headers.get("HX-Reswap") == "innerHTML"


def test_every_post_route_is_covered() -> None:
    from webui.studio import create_studio_app

    assert post_routes(create_studio_app().routes) == set(ROUTES)


@pytest.fixture()
def ids(sc: StudioClient, echo_rid: str) -> dict[str, str]:
    html = sc.open_play(echo_rid).text
    sid = page(html).by_id("env-page").attrs["data-session"]
    assert sc.post(f"/play/s/{sid}/reset", {"mode": "form"}).status_code == 200
    resp = sc.post(f"/play/s/{sid}/step", {"a.message": "hi"})
    eid = re.search(r'href="/episodes/([0-9a-f]+)"', resp.text).group(1)
    return {"sid": sid, "eid": eid, "rid": echo_rid, "key": sc.entry_key("echo"), "gone": GONE}


@pytest.mark.parametrize("kind", sorted(VALUES))
def test_bad_values_get_a_message_never_a_5xx(sc: StudioClient, ids: dict[str, str], kind: str) -> None:
    value = VALUES[kind]
    for name, (path, fields, htmx) in ROUTES.items():
        data = {f: value for f in fields} or {"anything": value}
        resp = sc.post(path.format(**ids), data, htmx=htmx)
        assert_message(resp, htmx=htmx, what=f"{name} {kind}")
        if kind == "oversized" and fields:
            assert 400 <= resp.status_code < 500, f"{name}: {resp.status_code}"
    # the play session still steps afterwards
    assert sc.post(f"/play/s/{ids['sid']}/step", {"a.message": "after"}).status_code == 200


def test_too_long_tag_keeps_the_notes_form(sc: StudioClient, ids: dict[str, str]) -> None:
    resp = sc.post(f"/episodes/{ids['eid']}/notes", {"tags": "t" * 200, "notes": "typed notes"})
    assert resp.status_code == 400 and resp.headers["X-Fragment-Error"] == "1"
    assert "at most 100 characters" in resp.text and 'id="notes"' not in resp.text


def test_seed_beyond_64_bits_is_a_field_error(sc: StudioClient, ids: dict[str, str]) -> None:
    resp = sc.post(f"/play/s/{ids['sid']}/reset", {"r.seed": str(2**64)})
    assert resp.status_code == 422 and resp.headers["HX-Retarget"] == "#reset-editor"
    assert "must fit in 64 bits" in resp.text


def test_endpoint_settings_out_of_range_are_shown_by_their_fields(sc: StudioClient) -> None:
    data = {"name": "local", "base_url": "http://127.0.0.1:9/v1", "model": "m", "temperature": "99",
            "max_tokens": "-3"}
    resp = sc.post("/models/endpoints", data, htmx=False)
    assert resp.status_code == 422
    form = page(resp.text).by_id("endpoint-form")
    assert "temperature must be between 0.0 and 2.0" in form.by_id("ep-temp-error").text()
    assert "max tokens must be between 1 and 1000000" in form.by_id("ep-max-tokens-error").text()
    assert form.find("input", name="temperature").attrs["value"] == "99"  # what was typed stays
    listed = sc.page("/models").find("li", data_endpoint="local")
    assert listed is None
