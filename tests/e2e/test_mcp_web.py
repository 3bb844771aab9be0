"""An MCP environment's tools on /web in a real browser: generated forms, results, errors, the env's view."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

from tests._require import require
from tests.webui.servers import serve

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def toolbox_web() -> Iterator[str]:
    require(importlib.util.find_spec("fastmcp") is not None, "fastmcp (the mcp extra)")
    from openenv.envs.toolbox.app import app

    with serve(app) as url:
        yield url


def _tool(page: Any, name: str) -> Any:
    return page.locator(f'#mcp-panel [data-tool="{name}"]')


def test_call_tools_from_generated_forms(page: Any, toolbox_web: str, shot: Any) -> None:
    page.goto(f"{toolbox_web}/web")
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    note = _tool(page, "add_note")
    note.wait_for()
    note.locator('input[name$=".text"]').fill("from the browser")
    note.locator('input[name$=".tag"]').fill("b")
    note.locator("button[type=submit]").click()
    note.locator(".mcp-result .tool-result").wait_for()
    assert note.locator(".mcp-result").inner_text().strip().endswith("1")
    page.wait_for_selector("#observation .badge.step:text('step 1')")
    page.wait_for_function("document.querySelectorAll('#history .history-row').length === 2")
    assert "add_note" in page.inner_text("#history")

    dist = _tool(page, "distance")
    for field, value in (("start.x", "0"), ("start.y", "0"), ("end.x", "3"), ("end.y", "4")):
        dist.locator(f'input[name$=".{field}"]').fill(value)
    dist.locator("select").select_option("manhattan")
    dist.locator("button[type=submit]").click()
    page.wait_for_function(
        "document.querySelector('[data-tool=distance] .mcp-result')?.innerText.includes('7.0')"
    )
    page.wait_for_selector("#observation .badge.step:text('step 2')")

    # a tool error is shown, and recorded like a step
    note.locator('input[name$=".text"]').fill("   ")
    note.locator("button[type=submit]").click()
    note.locator(".tool-error").wait_for()
    assert "a note needs some text" in note.locator(".tool-error").inner_text()
    assert "execution_error" in note.locator(".tool-error").inner_text()
    page.wait_for_selector("#observation .badge.step:text('step 3')")

    # a field the form cannot read is refused next to the field, no call made
    add = _tool(page, "add")
    add.locator('input[name$=".a"]').fill("")
    add.locator('input[name$=".a"]').evaluate("el => { el.type = 'text'; el.value = 'abc'; }")
    add.locator("button[type=submit]").click()
    page.wait_for_selector('[data-tool="add"] .field-errors')
    assert page.locator("#history .history-row").count() == 4
    shot(page)


def test_render_web_is_sandboxed_and_web_actions_are_buttons(page: Any, toolbox_web: str, shot: Any) -> None:
    page.goto(f"{toolbox_web}/web")
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    note = _tool(page, "add_note")
    note.locator('input[name$=".text"]').fill("<script>parent.document.title='owned'</script>drawn")
    note.locator("button[type=submit]").click()
    page.wait_for_selector("#observation .badge.step:text('step 1')")
    frame = page.locator("#web-view iframe")
    page.wait_for_function("document.querySelector('#web-view iframe')?.srcdoc.includes('drawn')")
    assert frame.get_attribute("sandbox") == ""
    inner = page.frame_locator("#web-view iframe")
    assert "drawn" in inner.locator("ol").inner_text()
    assert page.title() != "owned"
    page.locator("#web-view button", has_text="Finish").click()
    page.wait_for_selector("#observation .badge.step:text('step 2')")  # (not :text('done'): a substring match)
    page.wait_for_selector("#observation .badge:text-is('done')")
    assert "finish" in page.inner_text("#history")
    shot(page)


def _hostile_app() -> Any:
    """A plain (non-MCP) env whose render_web tries to run a script; web_actions give two buttons."""
    from openenv.core.env_server import create_app
    from openenv.envs.echo import EchoAction, EchoEnvironment, EchoObservation

    class Hostile(EchoEnvironment):
        def render_web(self, observation):
            said = observation.get("echoed_message", "")
            return (
                f'<p id="said">{said or "nothing yet"}</p>'
                "<script>document.getElementById('said').textContent='script ran';"
                "parent.document.title='owned';</script>"
            )

        def web_actions(self, observation):
            return [("Say hi", {"message": "hi"}), ("Say bye", {"message": "bye"})]

    return create_app(Hostile, EchoAction, EchoObservation, env_name="hostile")


def test_render_web_scripts_never_run_and_actions_step(context: Any, shot: Any) -> None:
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: msg.type == "error" and errors.append(msg.text))
    with serve(_hostile_app()) as url:
        page.goto(f"{url}/web")
        assert page.locator("#mcp-panel").count() == 0  # not an MCP env: no tools panel
        page.click("#reset-button")
        page.wait_for_selector("#observation .badge.step:text('reset')")
        page.wait_for_selector("#web-view button")
        page.locator("#web-view button", has_text="Say bye").click()
        page.wait_for_selector("#observation .badge.step:text('step 1')")
        page.wait_for_function("document.querySelector('#web-view iframe')?.srcdoc.includes('bye')")
        assert page.locator("#web-view iframe").get_attribute("sandbox") == ""
        assert page.frame_locator("#web-view iframe").locator("#said").inner_text() == "bye"
        assert page.title() == "hostile · OpenEnv"
        assert "bye" in page.inner_text("#observation")
        shot(page)
    # Chromium reports the refused script: proof the sandbox held; nothing else may fail
    blocked = [e for e in errors if "Blocked script execution in 'about:srcdoc'" in e]
    assert blocked and len(blocked) == len([e for e in errors if not e.startswith("Failed to load resource")])
