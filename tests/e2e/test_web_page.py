"""The /web page in a real browser: echo and the every-field-kind zoo env."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.webui.servers import serve, zoo_app

pytestmark = pytest.mark.browser


def _field(name: str) -> str:
    """CSS selector of the input for a form field name."""
    return f'[id="f-{name}"]'


def _reset(page: Any, **fields: str) -> None:
    for name, value in fields.items():
        page.fill(_field(name), value)
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")


def _echoed(page: Any) -> dict[str, Any]:
    """The action the zoo env received, as it echoed it (JSON text) in its latest observation."""
    return json.loads(page.text_content('#observation [data-key="echo_json"] pre'))  # may be folded


def test_echo_step_with_keyboard(page: Any, echo_web: str, shot: Any) -> None:
    page.goto(f"{echo_web}/web")
    assert page.title() == "echo · OpenEnv"
    _reset(page)
    page.fill(_field("a.message"), "hello browser")
    page.press(_field("a.message"), "Control+Enter")
    page.wait_for_selector("#observation .badge.step:text('step 1')")
    obs = page.inner_text("#observation")
    assert "hello browser" in obs and "reward 1.3" in obs
    page.wait_for_function("document.querySelectorAll('#history .history-row').length === 2")
    page.wait_for_function("document.querySelector('#state').innerText.includes('hello browser')")
    shot(page)


def test_every_field_kind(page: Any, zoo_web: str, shot: Any) -> None:
    page.goto(f"{zoo_web}/web")
    _reset(page)
    page.fill(_field("a.text"), "zoo")
    page.fill(_field("a.body"), "first\nsecond")
    page.fill(_field("a.count"), "6")
    page.check(_field("a.enabled"))
    page.select_option(_field("a.color"), label="blue")
    page.select_option(_field("a.level"), label="2")
    page.fill(_field("a.maybe_int"), "11")
    assert not page.is_checked('[name="a.maybe_int.~null"]')
    page.select_option(_field("a.shape"), label="rect")
    page.fill(_field("a.shape.~1.w"), "4")
    page.click('[data-field="a.items"] > [data-add-row]')
    page.fill(_field("a.items.0.name"), "apple")
    page.fill(_field("a.items.0.qty"), "2")
    page.click('[data-field="a.items.0.tags"] > [data-add-row]')
    page.fill(_field("a.items.0.tags.0"), "red")
    page.click('[data-field="a.words"] > [data-add-row]')
    page.fill(_field("a.words.1"), "b")
    page.click('[data-field="a.words"] > [data-add-row]')
    page.fill(_field("a.words.2"), "gone")
    page.click('[data-field="a.words"] [data-field="a.words.2"] >> xpath=../.. >> [data-remove-row]')
    page.click('[data-field="a.shapes"] > [data-add-row]')
    page.select_option(_field("a.shapes.0"), label="group")
    page.click('[data-field="a.shapes.0.~2.members"] > [data-add-row]')
    page.fill(_field("a.shapes.0.~2.members.0.~0.radius"), "2.5")
    page.click('[data-field="a.extra"] > summary')
    page.fill(_field("a.extra"), '{"k": [1, 2]}')
    shot(page, "filled")
    page.click("#step-button")
    page.wait_for_selector("#observation .badge.step:text('step 1')")
    echo = _echoed(page)
    assert echo["text"] == "zoo" and echo["body"] == "first\nsecond" and echo["count"] == 6
    assert echo["enabled"] is True and echo["color"] == "blue" and echo["level"] == 2
    assert echo["maybe_int"] == 11 and echo["shape"] == {"kind": "rect", "w": 4, "h": 2, "label": None}
    assert echo["items"] == [{"name": "apple", "qty": 2, "tags": ["red"]}]
    assert echo["words"] == ["a", "b"]
    assert echo["shapes"] == [{"kind": "group", "members": [{"kind": "circle", "radius": 2.5}]}]
    assert echo["extra"] == {"k": [1, 2]}
    assert "done" in page.inner_text("#observation .badge.done")
    assert page.locator("#observation .v-image img").count() == 1
    shot(page, "stepped")


def test_inline_validation_error_then_fix(page: Any, zoo_web: str, shot: Any) -> None:
    page.goto(f"{zoo_web}/web")
    _reset(page)
    page.fill(_field("a.text"), "forbidden")
    page.keyboard.press("Control+Enter")
    error = page.wait_for_selector('[id="f-a.text-err"]')
    assert "not allowed" in error.inner_text()
    assert page.get_attribute(_field("a.text"), "aria-invalid") == "true"
    shot(page)
    page.fill(_field("a.text"), "fine")
    page.click("#step-button")
    page.wait_for_selector("#observation .badge.step:text('step 1')")
    page.wait_for_function("document.querySelectorAll('.field-errors').length === 0")


def test_reset_with_seed_and_reset_params(page: Any, zoo_web: str) -> None:
    page.goto(f"{zoo_web}/web")
    page.fill(_field("r.seed"), "7")
    assert not page.is_checked('[name="r.seed.~null"]')
    page.fill(_field("r.difficulty"), "4")
    page.select_option(_field("r.board"), label="large")
    _reset(page)
    assert "ready seed=7 difficulty=4 board=large" in page.inner_text("#observation")
    page.wait_for_function("document.querySelector('#state').innerText.includes('difficulty')")
    assert "4" in page.inner_text('#state')


def test_two_tabs_have_independent_episodes(context: Any, zoo_web: str, shot: Any) -> None:
    a, b = context.new_page(), context.new_page()
    a.goto(f"{zoo_web}/web")
    b.goto(f"{zoo_web}/web")
    assert a.get_attribute("#env-page", "data-session") != b.get_attribute("#env-page", "data-session")
    _reset(a)
    for word in ("alpha-one", "alpha-two"):
        a.fill(_field("a.text"), word)
        a.click("#step-button")
        a.wait_for_selector(f"#observation .obs-field:has-text('{word}')")
    assert "No episode yet" in b.inner_text("#observation")
    assert b.locator("#history .history-row").count() == 0
    _reset(b, **{"r.seed": "3"})
    b.fill(_field("a.text"), "zeta-bee")
    b.click("#step-button")
    b.wait_for_selector("#observation .badge.step:text('step 1')")
    a.wait_for_function("document.querySelectorAll('#history .history-row').length === 3")
    assert "zeta-bee" not in a.inner_text("#history") and "alpha" not in b.inner_text("#history")
    shot(a, "tab-a")
    shot(b, "tab-b")
    a.close()
    b.close()


def test_history_raw_json_and_show_all(page: Any, zoo_web: str) -> None:
    page.goto(f"{zoo_web}/web")
    _reset(page)
    page.fill(_field("a.text"), "first")
    page.click("#step-button")
    page.wait_for_selector("#observation .badge.step:text('step 1')")
    page.click("#action-editor [role=tab]:text('JSON')")
    raw = page.wait_for_selector("#raw-json")
    action = json.loads(raw.input_value())
    assert action["text"] == "first" and action["count"] == 3
    action["text"] = "second"
    raw.fill(json.dumps(action))
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#observation .badge.step:text('step 2')")
    page.click("#history .history-row[data-index='1']")
    page.wait_for_selector("#observation .badge.step:text('step 1')")
    assert "back to latest" in page.inner_text("#observation")
    log = page.locator('#observation [data-key="log"]')
    assert not log.locator("button:text('show all')").is_visible()  # a long log starts folded
    log.locator("details.v-folded > summary").click()
    log.locator("button:text('show all')").click()
    page.wait_for_function(
        "document.querySelector('#observation [data-key=\"log\"]').innerText.includes('line 599')")
    page.click("#action-editor [role=tab]:text('Form')")
    assert page.input_value(_field("a.text")) == "second"


@pytest.mark.parametrize("width", [390, 1280])
def test_layout_fits_the_viewport(context: Any, zoo_web: str, width: int, shot: Any) -> None:
    tab = context.new_page()
    tab.set_viewport_size({"width": width, "height": 800})
    tab.goto(f"{zoo_web}/web")
    _reset(tab)
    tab.fill(_field("a.text"), "narrow" if width < 600 else "wide")
    tab.click("#step-button")
    tab.wait_for_selector("#observation .badge.step:text('step 1')")
    overflow = tab.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    shot(tab)
    tab.close()


def test_leaving_the_page_frees_its_session(page: Any) -> None:
    """With a cap of one session, reloading and resetting again works: the old tab's session is closed."""
    app = zoo_app(max_concurrent_envs=1)
    server = app.state.env_server
    with serve(app) as url:
        page.goto(f"{url}/web")
        _reset(page)
        assert len(server.list_sessions()) == 1
        page.reload()
        _reset(page)
        assert "ready seed=None" in page.inner_text("#observation")
        page.goto("about:blank")
        for _ in range(200):
            if not server.list_sessions():
                break
            page.wait_for_timeout(50)
        assert server.list_sessions() == []


def test_list_bounds_disable_add_and_remove(page: Any, zoo_web: str) -> None:
    page.goto(f"{zoo_web}/web")
    words = '[data-field="a.words"]'
    add = page.locator(f"{words} > [data-add-row]")
    remove = page.locator(f"{words} > [data-rows] > li > [data-remove-row]")
    assert remove.count() == 1 and remove.first.is_disabled()  # minItems 1
    for _ in range(3):
        add.click()
    assert remove.count() == 4 and add.is_disabled()  # maxItems 4
    assert all(remove.nth(i).is_enabled() for i in range(4))
    remove.nth(0).click()
    assert add.is_enabled() and remove.count() == 3
