"""The /web page over HTTP against a real server: fragments, errors, history, state, isolation."""

from __future__ import annotations

import re
from collections.abc import Callable

import httpx

from tests.webui.page import HX, Tab, form_fields


def _clean(resp: httpx.Response) -> str:
    assert "Traceback" not in resp.text and 'File "' not in resp.text
    return resp.text


def test_page_renders_with_assets(http: httpx.Client, open_tab: Callable[[], Tab]) -> None:
    tab = open_tab()
    html = tab.html
    assert "<title>zoo · OpenEnv</title>" in html and "Every field kind, echoed back." in html
    urls = re.findall(r'(?:href|src)="(/web/static/[^"]+)"', html)
    assert len(urls) == 3 and all("?v=" in u for u in urls)
    for asset in urls:
        resp = http.get(asset)
        assert resp.status_code == 200 and "immutable" in resp.headers["cache-control"]
    fields = form_fields(tab.html, "step-form")
    assert fields["mode"] == ["form"] and fields["a.count"] == ["3"] and fields["a.color"] == ['"green"']
    reset = form_fields(tab.html, "reset-form")
    assert {"r.seed.~null", "r.difficulty", "r.board"} <= set(reset)
    slash = Tab.open(http, "/web/")
    assert slash.sid != tab.sid
    slash.post("close", {})


def test_step_before_reset_is_a_readable_error(open_tab: Callable[[], Tab]) -> None:
    resp = open_tab().step(**{"a.text": "hi"})
    assert resp.status_code == 409
    assert "STEP_BEFORE_RESET" in _clean(resp) and 'id="observation"' in resp.text


def test_reset_with_seed_then_step(http: httpx.Client, open_tab: Callable[[], Tab]) -> None:
    tab = open_tab()
    data = form_fields(tab.html, "reset-form")
    assert data["r.seed.~null"] == ["1"]  # seed starts as "none"; typing a seed unticks it (JS)
    data.pop("r.seed.~null")
    data.update({"r.seed": ["42"], "r.difficulty": ["3"], "r.board": ['"large"']})
    resp = tab.post("reset", data)
    assert resp.status_code == 200, resp.text
    assert "ready seed=42 difficulty=3 board=large" in _clean(resp)
    assert resp.headers["HX-Trigger"] == "openenv:changed"
    resp = tab.step(**{"a.text": "hello", "a.count": "3"})
    body = _clean(resp)
    assert resp.status_code == 200
    assert "step 1: hello" in body and "reward 5" in body
    assert '<h3 class="mono" title="What happened">note</h3>' in body
    assert 'id="history" class="panel history" hx-swap-oob="true"' in body
    assert "data:image/png;base64,iVBOR" in body
    assert "show all" in body
    state = _clean(tab.get("state"))
    assert "step_count" in state and "hello" in state and ">3<" in state


def test_validation_error_is_inline(http: httpx.Client, open_tab: Callable[[], Tab]) -> None:
    tab = open_tab()
    tab.reset()
    resp = tab.step(**{"a.text": "forbidden", "a.outer.inner.depth": "x1"})
    assert resp.status_code == 422
    assert resp.headers["HX-Retarget"] == "#action-editor"
    html = _clean(resp)
    assert "Enter a whole number" in html
    resp = tab.step(**{"a.text": "forbidden"})
    html = _clean(resp)
    field = html[html.index('data-field="a.text"'):html.index('data-field="a.body"')]
    assert "not allowed" in field and 'aria-invalid="true"' in field
    assert 'value="forbidden"' in field


def test_raw_json_mode(http: httpx.Client, open_tab: Callable[[], Tab]) -> None:
    tab = open_tab()
    tab.reset()
    to_raw = tab.post("editor", form_fields(tab.html, "step-form"), to="raw")
    raw = re.search(r'<textarea id="raw-json"[^>]*>(.*?)</textarea>', to_raw.text, re.S).group(1)
    assert "&#34;count&#34;: 3" in raw or "&quot;count&quot;: 3" in raw
    bad = tab.post("step", {"mode": ["raw"], "raw_json": ["{oops"]})
    assert bad.status_code == 422 and "Invalid JSON" in _clean(bad)
    invalid = tab.post("step", {"mode": ["raw"], "raw_json": ['{"text": 5}']})
    assert invalid.status_code == 422 and "text: Input should be a valid string" in _clean(invalid)
    ok = tab.post("step", {"mode": ["raw"], "raw_json": ['{"text": "from json", "count": 0}']})
    assert ok.status_code == 200 and "step 1: from json" in _clean(ok)
    back = tab.post("editor", {"mode": ["raw"], "raw_json": ['{"text": "again", "count": 7}']}, to="form")
    assert 'name="a.text" value="again"' in back.text and 'name="a.count" value="7"' in back.text
    stuck = tab.post("editor", {"mode": ["raw"], "raw_json": ["[1"]}, to="form")
    assert 'id="raw-json"' in stuck.text and "Invalid JSON" in stuck.text


def test_history_and_show_all(http: httpx.Client, open_tab: Callable[[], Tab]) -> None:
    tab = open_tab()
    tab.reset()
    for word in ("one", "two", "three"):
        assert tab.step(**{"a.text": word}).status_code == 200
    first = _clean(tab.get("history/1"))
    assert "step 1: one" in first and "back to latest" in first
    assert "reward 3" in first
    full = _clean(tab.get("value/3", path="/observation/log"))
    assert "line 599" in full and "show all" not in full
    assert tab.get("history/99").status_code == 404
    assert tab.get("value/99", path="/observation/log").status_code == 404


def test_tabs_are_isolated(open_tab: Callable[[], Tab]) -> None:
    a, b = open_tab(), open_tab()
    assert a.sid != b.sid
    a.reset()
    a.step(**{"a.text": "only in A"})
    b_state = _clean(b.get("state"))
    assert "only in A" not in b_state
    b.reset(**{"r.difficulty": "2"})
    b_page = _clean(b.step(**{"a.text": "B"}))
    assert "only in A" not in b_page
    a_hist = _clean(a.get("history/1"))
    assert "only in A" in a_hist


def test_closed_and_unknown_sessions(http: httpx.Client, open_tab: Callable[[], Tab]) -> None:
    tab = open_tab()
    assert tab.post("close", {}).status_code == 204
    resp = tab.step(**{"a.text": "x"})
    assert resp.status_code == 410 and "This page is out of date" in _clean(resp)
    assert resp.headers["HX-Retarget"] == "#observation"
    plain = http.post("/web/s/nope/step", data={"a.text": "x"})
    assert plain.status_code == 410 and "<html" in _clean(plain)


def test_without_htmx_the_whole_page_comes_back(http: httpx.Client, open_tab: Callable[[], Tab]) -> None:
    tab = open_tab()
    tab.post("reset", form_fields(tab.html, "reset-form"), htmx=False)
    data = form_fields(tab.html, "step-form")
    data["a.text"] = ["plain post"]
    resp = tab.post("step", data, htmx=False)
    assert resp.status_code == 200 and "<!doctype html>" in resp.text
    assert "step 1: plain post" in _clean(resp)


def test_htmx_header_constant() -> None:
    assert HX == {"HX-Request": "true"}


def test_everything_is_escaped(open_tab: Callable[[], Tab]) -> None:
    tab = open_tab()
    tab.reset(**{"r.episode_id": "<b>ep</b>"})
    payload = "<script>alert(1)</script>"
    body = _clean(tab.step(**{"a.text": payload}))
    assert payload not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    state = tab.get("state").text
    assert "<b>ep</b>" not in state and "&lt;b&gt;ep&lt;/b&gt;" in state


def test_page_ids_are_unique_and_labels_point_at_controls(open_tab: Callable[[], Tab]) -> None:
    from collections import Counter
    from html.parser import HTMLParser

    class Ids(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.ids: Counter[str] = Counter()
            self.fors: list[str] = []
            self.in_template = 0

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            a = dict(attrs)
            self.in_template += tag == "template"
            if self.in_template:
                return
            if a.get("id"):
                self.ids[a["id"]] += 1
            if tag == "label" and a.get("for"):
                self.fors.append(a["for"])

        def handle_endtag(self, tag: str) -> None:
            self.in_template -= tag == "template"

    tab = open_tab()
    tab.reset()
    data = form_fields(tab.html, "step-form")
    data["a.text"] = ["ids"]
    page = tab.post("step", data, htmx=False)
    assert "step 1: ids" in page.text
    parser = Ids()
    parser.feed(page.text)
    assert [i for i, n in parser.ids.items() if n > 1] == []
    assert parser.fors and all(f in parser.ids for f in parser.fors)
