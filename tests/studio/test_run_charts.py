"""The charts' links and legends: the episode reward chart links each step (or bucket of a long
episode) to it, marks points when they are few and names its series; a run chart links each
training step to its groups and scales its band to fit."""

from __future__ import annotations

from openenv.recording.run_queries import StepStats
from tests.studio.html import parse
from webui.studio.charts import MAX_POINTS, reward_chart
from webui.studio.run_charts import reasons_chart, sparkline, step_chart


def test_a_short_episode_chart_links_and_marks_every_step() -> None:
    doc = parse(str(reward_chart([None, 1.0, 0.0, 2.0], step_url="/episodes/e?step=")))
    links = doc.with_class("step-hit")
    assert [a.attrs["href"] for a in links] == [f"/episodes/e?step={i}" for i in range(4)]
    assert len(doc.with_class("marker")) == 4
    assert "running return" in doc.with_class("chart-legend")[0].text()


def test_a_long_episode_chart_links_buckets_without_markers() -> None:
    doc = parse(str(reward_chart([None] + [0.0] * 9998 + [1.0], step_url="?step=")))
    links = doc.with_class("step-hit")
    assert len(links) == MAX_POINTS and links[-1].attrs["href"].startswith("?step=99")
    assert "steps" in links[-1].find("title").text() and not doc.with_class("marker")
    assert "min..max per bucket" in doc.with_class("chart-legend")[0].text()


def _steps(n: int) -> list[StepStats]:
    return [StepStats(x=i, n=8, mean=i / n, std=0.5, min=0.0, max=1.0, success=i / n, length=3.0, live=0,
                      reasons={"env_done": 6, "env_error": 2}, groups=2, zero_spread=i % 2) for i in range(n)]


def test_run_charts_link_each_step_and_keep_the_band_inside() -> None:
    steps = _steps(5)
    svg = parse(str(step_chart(steps, lambda x: f"/runs/step?run=r&step={x}"))).find("svg")
    assert [a.attrs["data-step"] for a in svg.with_class("step-hit")] == ["0", "1", "2", "3", "4"]
    ys = [float(v.split(",")[1]) for p in svg.find_all("polygon") for v in p.attrs["points"].split()]
    assert min(ys) >= 0 and max(ys) <= 180  # mean ± std stays in the frame
    reasons = parse(str(reasons_chart(steps, lambda x: f"?step={x}")))
    assert {k.text() for k in reasons.with_class("key")} == {"env_done", "env_error"}
    assert 'class="sparkline"' in str(sparkline([0.1, 0.2, None, 0.4]))
    assert "—" in str(sparkline([None]))


def test_the_token_chart_draws_completion_and_prompt_means_and_names_both() -> None:
    steps = [StepStats(x=i, n=4, mean=0.5, std=0.1, min=0.0, max=1.0, success=0.5, length=1.0, live=0,
                       prompt_tokens=200.0 + i, completion_tokens=40.0 * (i + 1), tokens=4 * (240 + 41 * i))
             for i in range(3)]  # fmt: skip
    doc = parse(str(step_chart(steps, lambda x: f"?step={x}", metric="tokens")))
    svg = doc.find("svg")
    assert svg.attrs["data-chart"] == "tokens"
    lines = {p.attrs["class"]: p.attrs["points"].split() for p in svg.find_all("polyline")}
    assert set(lines) == {"series tokens", "series prompt-tokens"} and all(len(v) == 3 for v in lines.values())
    ys = [float(v.split(",")[1]) for v in lines["series tokens"]]
    assert ys == sorted(ys, reverse=True)  # completion tokens grow: the line climbs
    legend = doc.with_class("chart-legend")[0].text()
    assert "completion" in legend and "prompt" in legend
    assert "200 prompt + 40 completion per episode, 960 in all" in svg.with_class("step-hit")[0].find("title").text()
