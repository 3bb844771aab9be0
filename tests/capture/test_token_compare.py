"""Two captures side by side, token by token (``/episodes/compare/tokens``), over episodes written
by each capturing writer: the proxy (``openenv capture``), ``openenv rollout --capture tokens`` and
``openenv collect --capture tokens``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
from click.testing import CliRunner

from openenv.cli.main import cli
from openenv.recording import EpisodeFilter, EpisodeStore
from tests.server_utils import running_server
from tests.studio.conftest import StudioClient, make_settings, running_studio

from .test_studio_tokens import _captured


def _rolled_out(engine_url: str, db: Path) -> str:
    run = subprocess.run([sys.executable, "-m", "openenv", "rollout", "--env", "echo", "--model-url", engine_url,
                          "--model", "json", "--episodes", "1", "--max-steps", "2", "--capture", "tokens",
                          "--label", "tok-rollout", "--db", str(db)], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    with EpisodeStore(db) as store:
        (ep,) = store.list_episodes(EpisodeFilter(label="tok-rollout")).items
    return ep.id


def _collected(engine_url: str, data: Path) -> str:
    from tests.webui.servers import echo_app

    with running_server(echo_app()) as echo_url:  # a fresh app: a served app's lifespan ends its executor
        result = CliRunner().invoke(cli, [
            "collect", "echo:tides", "--base-url", echo_url, "-o", str(data / "collect-out"), "-n", "1",
            "--label", "tok-collect", "--db", str(data / "episodes.db"), "--llm-endpoint",
            engine_url.removesuffix("/v1"), "--model", "vllm", "--capture", "tokens",
        ], catch_exceptions=False)  # fmt: skip
    assert result.exit_code == 0, result.output
    with EpisodeStore(data / "episodes.db") as store:
        (ep,) = store.list_episodes(EpisodeFilter(label="tok-collect")).items
    return ep.id


def test_token_comparison_over_every_capturing_writer(engine_url: str, tmp_path: Path) -> None:
    proxy_a = _captured(engine_url, tmp_path)
    proxy_b = _captured(engine_url, tmp_path)  # the same harness run again: the same ids
    rollout = _rolled_out(engine_url, tmp_path / "episodes.db")
    collected = _collected(engine_url, tmp_path)
    with running_studio(make_settings(tmp_path)) as url:
        sc = StudioClient(httpx.Client(base_url=url, timeout=30, trust_env=False))

        same = sc.page("/episodes/compare/tokens", params={"a": proxy_a, "b": proxy_b})
        assert same.by_id("token-no-divergence") is not None
        rows = same.with_class("cmp-row")
        assert len(rows) == 2 and all(r.attrs["data-same"] == "true" for r in rows)
        cells = same.by_id("tok-call-0").with_class("tok")
        assert cells and all("logprob" in c.attrs["title"] for c in cells) and not same.by_id("token-compare-rows").with_class("tok-diff")

        mixed = sc.page("/episodes/compare/tokens", params={"a": proxy_a, "b": rollout})
        assert mixed.by_id("token-compare-summary").attrs["data-divergence"] == "0"
        line = mixed.by_id("token-divergence-line").text()
        assert "conversation 1, turn 1" in line and "prompts agree on their first" in line
        assert len(mixed.by_id("tok-call-0").with_class("tok-diff")) == 2  # marked on both sides of the pair

        vs_collect = sc.page("/episodes/compare/tokens", params={"a": collected[:10], "b": proxy_a})
        assert vs_collect.by_id("token-compare-rows").with_class("cmp-row")
        assert vs_collect.by_id("token-compare-summary").attrs["data-divergence"] != ""

        steps = sc.page("/episodes/compare", params={"a": proxy_a, "b": rollout})
        link = steps.by_id("compare-tokens")
        assert link is not None and link.attrs["href"].startswith("/episodes/compare/tokens?a=")
        assert sc.page(f"/episodes/{proxy_a}/tokens").by_id("tokens-compare") is not None
        sc.http.close()


def test_token_comparison_of_episodes_without_capture_and_bad_ids(tmp_path: Path) -> None:
    with EpisodeStore(tmp_path / "episodes.db") as store:
        run = store.create_run(env_name="echo")
        a = store.start_episode(run, observation={"x": 1})
        b = store.start_episode(run, observation={"x": 2})
    with running_studio(make_settings(tmp_path)) as url:
        sc = StudioClient(httpx.Client(base_url=url, timeout=30, trust_env=False))
        empty = sc.page("/episodes/compare/tokens", params={"a": a, "b": b})
        assert "has captured model calls" in empty.by_id("token-compare-empty").text()
        steps = sc.http.get("/episodes/compare", params={"a": a, "b": b})
        assert steps.status_code == 200 and 'id="compare-tokens"' not in steps.text
        missing = sc.http.get("/episodes/compare/tokens", params={"a": a, "b": "ffffffffff"})
        assert missing.status_code == 404 and "Episode B" in missing.text
        blank = sc.http.get("/episodes/compare/tokens", params={"a": a})
        assert blank.status_code == 400 and "Choose episode B" in blank.text
        sc.http.close()
