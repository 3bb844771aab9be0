"""What ``openenv collect`` records is browsable in the studio: the episode list names the
collection, a step shows its model turn, and a captured collection opens in the token view."""

from __future__ import annotations

from pathlib import Path

import httpx
from click.testing import CliRunner

from openenv.cli.main import cli
from openenv.recording import EpisodeStore
from tests.studio.conftest import StudioClient, make_settings, running_studio


def test_collected_episodes_show_in_the_studio(echo_url: str, engine_url: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, [
        "collect", "echo:tides", "--base-url", echo_url, "-o", str(tmp_path / "out"), "-n", "1", "--label", "tides",
        "--db", str(tmp_path / "episodes.db"), "--llm-endpoint", engine_url, "--model", "vllm", "--capture", "tokens",
    ], catch_exceptions=False)  # fmt: skip
    assert result.exit_code == 0, result.output
    with EpisodeStore(tmp_path / "episodes.db") as store:
        [episode] = store.list_episodes().items
    with running_studio(make_settings(tmp_path)) as url:
        sc = StudioClient(httpx.Client(base_url=url, timeout=30, trust_env=False))
        listing = sc.http.get("/episodes")
        assert listing.status_code == 200 and "tides" in listing.text and episode.id[:12] in listing.text
        step = sc.page(f"/episodes/{episode.id}", params={"step": "1"})
        turn = step.by_id("agent-turn")
        assert turn is not None and turn.attrs["data-actor"] == "model"
        assert "echo_message" in turn.text() and "vllm" in turn.text()
        assert "sampled token ids" in step.by_id("agent-capture").text()
        view = sc.page(f"/episodes/{episode.id}/tokens")
        assert view.with_class("token-sequence") and len(view.with_class("model-call")) == 2
        sc.http.close()
