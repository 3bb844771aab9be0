"""A 0.10-style environment (rubric tree, generic Environment[A, O, S]) played in /web in a real browser."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.webui.servers import serve

pytestmark = pytest.mark.browser

RUBRIC_ENV = Path(__file__).resolve().parents[1] / "peers010" / "envs" / "rubric_env.py"


@pytest.fixture(scope="module")
def guess_web() -> Iterator[str]:
    spec = importlib.util.spec_from_file_location("e2e_rubric_env", RUBRIC_ENV)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # builds its app with create_app(GuessEnvironment, ..., "guess", 4)
    with serve(module.app) as url:
        yield url


def test_rubric_env_plays_in_web(page: Any, guess_web: str, shot: Any) -> None:
    page.goto(f"{guess_web}/web")
    page.fill('[id="f-r.seed"]', "7")
    page.click("#reset-button")
    page.wait_for_selector("#observation .badge.step:text('reset')")
    assert "start" in page.inner_text("#observation")
    page.fill('[id="f-a.guess"]', "7")
    page.fill('[id="f-a.style"]', "polite")
    page.click("#step-button")
    page.wait_for_selector("#observation .badge.step:text('step 1')")
    obs = page.inner_text("#observation")
    assert "exact" in obs and "reward 2" in obs  # step score 1.0 + the trajectory's final 1.0
    page.wait_for_function("document.querySelector('#state').innerText.includes('history')")
    shot(page)
