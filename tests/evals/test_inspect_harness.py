"""InspectAIHarness runs the evaluation tutorial's task for real: inspect-ai, a loopback model, an
MCP echo environment; the scores come back as 0.10 returns them and every sample lands in the
episode store, where the studio lists and shows it."""

from __future__ import annotations

import gc
from pathlib import Path

import httpx
import pytest

import openenv
from openenv.core.evals import EvalConfig, EvalResult, InspectAIHarness
from openenv.recording import EpisodeFilter, EpisodeStore
from tests.server_utils import running_server

HERE = Path(__file__).parent
# inspect-ai leaves one anyio receive stream per sample unclosed, and keeps its OpenAI client's
# keep-alive sockets (to the loopback model) from one eval() event loop to the next: seen with a
# bare generate() task and no openenv code at all, so those warnings are its own, not ours.
_INSPECT_LEFTOVERS = r"Exception ignored in. <(socket\.socket|function (_SelectorTransport|MemoryObjectReceiveStream)\.__del__)"
pytestmark = [
    pytest.mark.usefixtures("inspect_env"),
    pytest.mark.filterwarnings("ignore:Unclosed <MemoryObjectReceiveStream:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:unclosed:ResourceWarning"),
    pytest.mark.filterwarnings(f"ignore:{_INSPECT_LEFTOVERS}:pytest.PytestUnraisableExceptionWarning"),
]


@pytest.fixture(autouse=True)
def _collect_inspect_leftovers():
    """Collect them within the test, where the filters above apply (not at the session's end)."""
    yield
    gc.collect()


def _config(model_url: str, task: object, **params: object) -> EvalConfig:
    import inspect_ai

    return EvalConfig(harness_name="InspectAIHarness", harness_version=inspect_ai.__version__,
                      library_versions={"openenv": openenv.__version__}, dataset="openenv_echo_eval",
                      eval_parameters={"model": "openai/gpt-4o-mini", "model_base_url": model_url + "/v1",
                                       "task": task, **params})


def _episodes(db: Path, tag: str = "openenv_echo_eval") -> tuple[list, dict]:
    with EpisodeStore(db) as store:
        items = store.list_episodes(EpisodeFilter(tag=tag), limit=100).items
        steps = {e.id: store.load_steps(e.id) for e in items}
        runs = {e.id: store.get_episode(e.id) for e in items}
    return items, {"steps": steps, "episodes": runs}


def test_tutorial_task_object_scores_and_records_each_sample(model_url: str, echo_url: str, tmp_path: Path) -> None:
    from tests.evals.echo_task import openenv_echo_eval

    db = tmp_path / "episodes.db"
    harness = InspectAIHarness(log_dir=str(tmp_path / "logs"), store=str(db))
    before = len(httpx.get(model_url + "/_requests").json())
    result = harness.run_from_config(_config(model_url, openenv_echo_eval(base_url=echo_url), temperature=0.0))

    assert isinstance(result, EvalResult) and result.scores == {"accuracy": 0.8}
    assert result.model_dump()["scores"] == {"accuracy": 0.8}
    bodies = httpx.get(model_url + "/_requests").json()[before:]
    assert len(bodies) == 5 and {b["temperature"] for b in bodies} == {0.0}
    assert list((tmp_path / "logs").iterdir()), "inspect-ai wrote its log under log_dir"

    items, got = _episodes(db)
    assert len(items) == 5 and sorted(harness.last_episode_ids) == sorted(e.id for e in items)
    assert {(e.env_name, e.source, e.label, e.step_count, e.end_reason) for e in items} == {
        ("openenv_echo_eval", "eval", "openenv_echo_eval", 1, "done")}
    assert all(set(e.tags) == {"eval", "openenv_echo_eval"} for e in items)
    by_sample = {got["episodes"][e.id].reset_kwargs["sample_id"]: e for e in items}
    assert sorted(by_sample) == ["s0", "s1", "s2", "s3", "s4"]
    assert {sid: e.total_reward for sid, e in by_sample.items()} == {"s0": 1.0, "s1": 1.0, "s2": 1.0, "s3": 1.0,
                                                                       "s4": 0.0}
    wrong = got["steps"][by_sample["s4"].id]
    assert wrong[0].observation["input"] == "Repeat exactly: hugging face"
    assert wrong[0].observation["target"] == "hugging face"
    assert wrong[1].action == {"completion": "hugging fase"}
    score = wrong[1].observation["scores"]["echo_scorer"]
    assert score["value"] == "I" and score["explanation"] == "Env echoed 'hugging fase', expected 'hugging face'"
    assert wrong[1].actor == "model" and wrong[1].agent["model"] == "openai/gpt-4o-mini"
    assert [m["role"] for m in wrong[1].agent["messages"]] == ["user", "assistant"]
    assert wrong[1].agent["completion"] == "hugging fase" and wrong[1].agent["prompt_tokens"] > 0
    run = got["episodes"][by_sample["s0"].id].run
    assert run.provider == "inspect-ai" and run.info["scores"] == {"accuracy": 0.8}
    assert run.info["model"] == "openai/gpt-4o-mini" and run.info["status"] == "success"
    assert run.info["harness_version"] == result.config.harness_version


def test_task_file_form_with_task_args_and_record_off(model_url: str, echo_url: str, tmp_path: Path) -> None:
    spec = f"{HERE / 'echo_task.py'}@openenv_echo_eval"
    db = tmp_path / "episodes.db"
    harness = InspectAIHarness(log_dir=str(tmp_path / "logs"), store=str(db), record=False)
    result = harness.run_from_config(_config(model_url, spec, task_args={"base_url": echo_url}, max_samples=2))
    assert result.scores == {"accuracy": 0.8}
    assert harness.last_episode_ids == [] and not db.exists()


def test_default_store_and_label(model_url: str, echo_url: str, tmp_path: Path) -> None:
    from tests.evals.echo_task import openenv_echo_eval

    harness = InspectAIHarness(log_dir=str(tmp_path / "logs"), label="nightly")
    harness.run_from_config(_config(model_url, openenv_echo_eval(base_url=echo_url), epochs=2,
                                         max_samples=4))  # the echo env serves 8 sessions at once
    items, got = _episodes(tmp_path / "default-episodes.db")  # $OPENENV_EPISODES_DB (the fixture's)
    assert len(items) == 10 and {e.label for e in items} == {"nightly"}
    assert sorted((got["episodes"][e.id].reset_kwargs["sample_id"], got["episodes"][e.id].reset_kwargs["epoch"])
                  for e in items) == sorted((f"s{i}", k) for i in range(5) for k in (1, 2))


def test_a_failing_eval_raises_and_its_samples_are_recorded(model_url: str, tmp_path: Path) -> None:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate, solver

    @solver
    def refuse_second():
        async def solve(state, generate_):
            if state.sample_id == "b":
                raise ValueError("the environment refused sample b")
            return await generate_(state)
        return solve

    task = Task(dataset=[Sample(input="Repeat exactly: one", target="one", id="a"),
                         Sample(input="Repeat exactly: two", target="two", id="b")],
                solver=[refuse_second(), generate()], scorer=match(), name="refusing")
    db = tmp_path / "episodes.db"
    with EpisodeStore(db) as mine:  # a store object is the caller's: used, not closed
        harness = InspectAIHarness(log_dir=str(tmp_path / "logs"), store=mine)
        with pytest.raises(RuntimeError, match="Inspect AI evaluation failed with status: error"):
            harness.run_from_config(_config(model_url, task, max_samples=1))
        assert mine.count_episodes(EpisodeFilter(tag="refusing")) == len(harness.last_episode_ids) >= 1
    items, got = _episodes(db, tag="refusing")
    reasons = {got["episodes"][e.id].reset_kwargs["sample_id"]: e.end_reason for e in items}
    assert reasons.get("b") == "error"
    failed = next(e for e in items if e.end_reason == "error")
    assert "the environment refused sample b" in got["steps"][failed.id][1].observation["error"]


def test_model_is_required(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="eval_parameters must include 'model'"):
        InspectAIHarness(store=str(tmp_path / "e.db")).run("1", {}, "some_task", {})


def test_studio_lists_and_shows_eval_samples(model_url: str, echo_url: str, tmp_path: Path) -> None:
    from tests.evals.echo_task import openenv_echo_eval
    from webui.studio import create_studio_app, load_settings

    data = tmp_path / "studio"
    data.mkdir()
    harness = InspectAIHarness(log_dir=str(tmp_path / "logs"), store=str(data / "episodes.db"))
    harness.run_from_config(_config(model_url, openenv_echo_eval(base_url=echo_url)))
    settings = load_settings({"data_dir": data, "database": str(data / "episodes.db"), "docker": False}, environ={})
    with running_server(create_studio_app(settings)) as url, httpx.Client(base_url=url, trust_env=False) as http:
        listing = http.get("/episodes", params={"tag": "openenv_echo_eval"})
        assert listing.status_code == 200
        assert listing.text.count('class="episode-row"') == 5
        assert 'href="/episodes?tag=openenv_echo_eval"' in listing.text  # the tag links to its filter
        assert http.get("/episodes", params={"tag": "nope"}).text.count('class="episode-row"') == 0
        with EpisodeStore(data / "episodes.db") as store:
            wrong = next(e for e in store.list_episodes(EpisodeFilter(tag="eval")).items if e.total_reward == 0.0)
        start = http.get(f"/episodes/{wrong.id}")
        assert start.status_code == 200 and "Repeat exactly: hugging face" in start.text  # the sample
        answer = http.get(f"/episodes/{wrong.id}", params={"step": "1"})
        assert answer.status_code == 200
        assert "hugging fase" in answer.text and "Env echoed" in answer.text and "Model turn" in answer.text


def test_a_store_that_cannot_be_written_warns_and_keeps_the_scores(model_url: str, echo_url: str,
                                                                    tmp_path: Path) -> None:
    from tests.evals.echo_task import openenv_echo_eval

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    harness = InspectAIHarness(log_dir=str(tmp_path / "logs"), store=str(blocker / "episodes.db"))
    with pytest.warns(RuntimeWarning, match="InspectAIHarness could not record the samples: connect to sqlite"):
        result = harness.run_from_config(_config(model_url, openenv_echo_eval(base_url=echo_url)))
    assert result.scores == {"accuracy": 0.8} and harness.last_episode_ids == []
