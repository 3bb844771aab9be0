"""CSRF secret and Origin checks on every write; the access token off loopback."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from tests.studio.conftest import HX, StudioClient, make_settings, running_studio
from tests.studio.html import page


def test_write_without_csrf_token_is_refused(sc: StudioClient) -> None:
    resp = sc.http.post("/envs/catalogue", data={"target": "tests.x_y:app"}, headers=HX)
    assert resp.status_code == 403
    assert "CSRF" in resp.text


def test_write_with_wrong_token_or_foreign_origin_is_refused(sc: StudioClient) -> None:
    assert sc.http.post("/envs/catalogue", data={"target": "a:b"},
                        headers={"X-CSRF-Token": "nope"}).status_code == 403
    resp = sc.post("/envs/catalogue", {"target": "a:b"}, Origin="http://evil.example")
    assert resp.status_code == 403 and resp.json()["code"] == "ORIGIN_NOT_ALLOWED"
    resp = sc.post("/envs/catalogue", {"target": "a:b"}, **{"Sec-Fetch-Site": "cross-site"})
    assert resp.status_code == 403


def test_csrf_in_form_field_and_same_origin(sc: StudioClient, studio_url: str) -> None:
    resp = sc.http.post("/envs/catalogue", data={"target": "tests.pkg_mod:app", "csrf_token": sc.csrf},
                        headers={"Origin": studio_url})
    assert resp.status_code == 303
    key = sc.entry_key("tests.pkg_mod:app")
    assert sc.post(f"/envs/catalogue/{key}/remove").status_code == 200


def test_csrf_page_error_is_a_full_page_without_htmx(sc: StudioClient) -> None:
    resp = sc.http.post("/envs/attach", data={"url": "http://x"})
    assert resp.status_code == 403
    assert resp.text.lstrip().lower().startswith("<!doctype html>")
    assert "Traceback" not in resp.text


def test_token_gate(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, host="127.0.0.1", token="tok-123456")
    with running_studio(settings) as url, httpx.Client(base_url=url, trust_env=False) as http:
        assert http.get("/envs").status_code == 401
        assert http.get("/envs", params={"token": "wrong-token"}).status_code == 401
        assert http.get("/health").status_code == 200
        assert http.get("/envs", headers={"Authorization": "Bearer tok-123456"}).status_code == 200
        first = http.get("/envs", params={"token": "tok-123456"})
        assert first.status_code == 200
        assert "HttpOnly" in first.headers["set-cookie"]
        assert http.get("/episodes").status_code == 200  # the cookie now carries the token


def test_foreign_host_header_is_refused(sc: StudioClient, studio_url: str) -> None:
    port = studio_url.rsplit(":", 1)[1]
    for name in ("rebound.example", "127.0.0.1.evil.example", "localhost.evil.example"):
        resp = sc.http.get("/episodes", headers={"Host": f"{name}:{port}"})
        assert resp.status_code == 403 and resp.json()["code"] == "HOST_NOT_ALLOWED", name
        assert sc.csrf not in resp.text
    assert sc.http.get("/envs", headers={"Host": f"localhost:{port}"}).status_code == 200
    assert sc.http.get("/envs", headers={"Host": f"[::1]:{port}"}).status_code == 200


def test_foreign_host_is_refused_with_a_token_too(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, host="127.0.0.1", token="tok-123456")
    with running_studio(settings) as url, httpx.Client(base_url=url, trust_env=False) as http:
        auth = {"Authorization": "Bearer tok-123456"}
        assert http.get("/envs", headers={**auth, "Host": "127.0.0.1.evil.example"}).status_code == 403
        assert http.get("/envs", headers=auth).status_code == 200


def test_allowed_host_and_origin_settings(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, allow_hosts=("studio.lan",), allow_origins=("http://127.0.0.1:9",))
    with running_studio(settings) as url, httpx.Client(base_url=url, trust_env=False) as http:
        page = http.get("/envs", headers={"Host": "studio.lan"})
        assert page.status_code == 200
        assert http.get("/envs", headers={"Host": "other.lan"}).status_code == 403
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert csrf is not None
        resp = http.post("/envs/catalogue", data={"target": "tests.pkg_allowed:app", "csrf_token": csrf.group(1)},
                         headers={"Origin": "http://127.0.0.1:9"})
        assert resp.status_code == 303
        refused = http.post("/envs/catalogue", data={"target": "tests.pkg_other:app", "csrf_token": csrf.group(1)},
                            headers={"Origin": "http://127.0.0.1:10"})
        assert refused.status_code == 403


def test_no_studio_page_may_be_framed(sc: StudioClient, studio_url: str) -> None:
    port = studio_url.rsplit(":", 1)[1]
    for resp in (sc.http.get("/envs"), sc.http.get("/episodes"), sc.http.get("/models"), sc.http.get("/nope"),
                 sc.http.get("/envs", headers={"Host": f"evil.example:{port}"})):
        assert resp.headers["x-frame-options"] == "DENY", resp.url
        assert "frame-ancestors 'none'" in resp.headers["content-security-policy"]


def test_get_play_opens_no_session(sc: StudioClient, echo_rid: str) -> None:
    first = sc.http.get(f"/play/{echo_rid}", headers={"Sec-Fetch-Site": "cross-site"})
    assert first.status_code == 200 and 'id="play-start-form"' in first.text
    assert 'data-autostart="false"' in first.text  # a link from another site: the user must press the button
    env_url = re.search(r'at <span class="mono">([^<]+)</span>', first.text).group(1)
    before = len(httpx.get(f"{env_url}/sessions", timeout=10).json()["sessions"])
    for _ in range(5):
        assert 'id="play-start-form"' in sc.http.get(f"/play/{echo_rid}").text
    assert len(httpx.get(f"{env_url}/sessions", timeout=10).json()["sessions"]) == before
    asked = sc.http.get(f"/play/{echo_rid}", headers={"Sec-Fetch-Site": "same-origin"})
    assert 'data-autostart="true"' in asked.text  # from the studio's own Play link: it starts at once
    assert sc.http.post(f"/play/{echo_rid}", data={}).status_code == 403  # opening is a CSRF-checked POST
    opened = sc.open_play(echo_rid)
    sid = page(opened.text).by_id("env-page").attrs["data-session"]
    assert len(httpx.get(f"{env_url}/sessions", timeout=10).json()["sessions"]) == before + 1
    assert sc.post(f"/play/s/{sid}/close", {}).status_code == 204


def test_overlong_catalogue_targets_are_a_clear_4xx(sc: StudioClient) -> None:
    for target, words in (("x" * 5000, "at most 1024 characters"), ("y" * 300, "neither an env directory"),
                          ("pkg/" * 200 + "app", "neither an env directory")):
        resp = sc.post("/envs/catalogue", {"target": target})
        assert resp.status_code == 422 and words in resp.text, (len(target), resp.status_code)
