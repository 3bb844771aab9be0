"""Runs written by the real writers show on the Runs pages: an `openenv rollout` run, an
`openenv collect` run and a capture session, each listed by its label with a dashboard that
counts its model turns' tokens, and a rollout episode's transcript shows its model turns."""

from __future__ import annotations

from pathlib import Path

import httpx

from openenv.recording import EpisodeStore
from tests.studio.conftest import StudioClient, make_settings, running_studio

from .test_studio_tokens import _captured
from .test_token_compare import _collected, _rolled_out


def test_cli_rollout_collect_and_capture_runs_are_listed_and_charted(engine_url: str, tmp_path: Path) -> None:
    rollout = _rolled_out(engine_url, tmp_path / "episodes.db")
    _collected(engine_url, tmp_path)
    _captured(engine_url, tmp_path)
    with EpisodeStore(tmp_path / "episodes.db") as store:
        assert next(e.label for e in store.iter_episodes() if e.source == "capture") is None  # listed by source
    with running_studio(make_settings(tmp_path)) as url:
        sc = StudioClient(httpx.Client(base_url=url, timeout=30, trust_env=False))
        keys = [r.attrs["data-run"] for r in sc.page("/runs").find_all("tr", class_="run-row")]
        for key in ("label:tok-rollout", "label:tok-collect", "source:capture"):
            assert key in keys, keys
            dash = sc.page("/runs/dashboard", params={"run": key})
            assert dash.with_class("run-chart") and dash.by_id("run-episode-count").text().startswith("1 ")
            tokens = {svg.attrs["data-chart"] for svg in dash.with_class("run-chart")} >= {"tokens"}
            assert tokens and int(dash.by_id("run-token-count").text().split()[0]) > 0  # each writer counted its turns
        turns = sc.page(f"/episodes/{rollout}/transcript").with_class("turn")
        assert len(turns) >= 2 and any(t.attrs["data-actor"] == "model" for t in turns)
        sc.http.close()
