"""Real TRL GRPO (2 steps, CPU, tiny model) on a small word game, served by ours and by the
published 0.10, recorded with ``record_trl``: the same script on both servers gives the same
rollouts with the same rewards; rollouts the env ended are ``env_done``; a session TRL's
environment steps without ever resetting it (as TRL's echo guide does) is recorded too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.peer010 import serving_ours, serving_published
from tests.training import require_trl

pytestmark = [pytest.mark.filterwarnings(f"ignore::{kind}:{module}") for kind in ("FutureWarning", "UserWarning", "DeprecationWarning")
              for module in ("trl", "transformers", "torch", "accelerate", "datasets")]  # third-party notices  # fmt: skip
GAME = Path(__file__).with_name("word_game_env.py")
URL: dict[str, str] = {}
PROMPT = [{"role": "user", "content": "Guess the five-letter word."}]
ROWS = [("crane", "crane"), ("crane", "trace"), ("slate", "plate"), ("slate", "!")]  # secret, first guess ("!": a bad action)


class WordGameEnv:
    """A TRL environment: a plain client made in ``__init__``; the rollout's first guess comes from
    the dataset (the tiny random model never writes a parsable tool call)."""

    reset_client = True

    def __init__(self) -> None:
        from openenv.core.generic_client import GenericEnvClient

        self.client = GenericEnvClient(base_url=URL["game"])
        self.reward = 0.0

    def reset(self, secret: str, first: str, **kwargs: Any) -> str | None:
        if self.reset_client:
            self.client.reset(secret=secret)
        try:
            result = self.client.step({"guess": first if first != "!" else None})  # the server refuses None
        except Exception as exc:  # noqa: BLE001 - as a tool would, the env class reports the error to the model
            self.reward = 0.0
            return f"Error: {exc}"
        self.reward = float(result.reward or 0.0)
        return f"Feedback: {result.observation['feedback'] if isinstance(result.observation, dict) else ''}"

    def guess(self, word: str) -> str:
        """Guess the secret word.

        Args:
            word: A five-letter word.
        """
        result = self.client.step({"guess": word})
        self.reward = float(result.reward or 0.0)
        return str(result.observation)


class NeverResetEnv(WordGameEnv):
    reset_client = False  # steps the session as it is, like TRL's echo guide


def reward_func(environments: list[WordGameEnv], **kwargs: Any) -> list[float]:
    return [env.reward for env in environments]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_trl()
    from tests.training.tiny_model import build_tiny

    return build_tiny(tmp_path_factory.mktemp("tiny") / "game")  # random: it never writes a tool call


def _train(model: Path, out: Path, env_cls: type, name: str) -> list[tuple[int, str, int, float | None, str | None, int]]:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from openenv.recording import EpisodeFilter, EpisodeStore
    from openenv.training import record_trl

    args = GRPOConfig(output_dir=str(out / "out"), max_steps=2, per_device_train_batch_size=4, num_generations=2,
                      max_completion_length=16, logging_steps=1, report_to="none", use_cpu=True, save_strategy="no",
                      seed=0, shuffle_dataset=False, chat_template_kwargs={"enable_thinking": False})  # fmt: skip
    data = Dataset.from_dict({"prompt": [PROMPT] * len(ROWS), "secret": [r[0] for r in ROWS],
                              "first": [r[1] for r in ROWS]})  # fmt: skip
    trainer = GRPOTrainer(model=str(model), reward_funcs=reward_func, args=args, train_dataset=data,
                          environment_factory=env_cls)  # fmt: skip
    record_trl(trainer, store=str(out / "runs.db"), name=name)
    trainer.train()
    with EpisodeStore(out / "runs.db") as store:
        (run,), _ = store.list_training_runs()
        assert run.status == "finished" and run.episodes == 8
        eps = sorted(store.iter_episodes(EpisodeFilter(training_run_id=run.id)),
                     key=lambda e: (e.train_step, e.group_id, e.group_index))  # fmt: skip
        for e in eps:
            assert e.finished and e.step_count == (0 if e.finish_reason == "env_error" else 1)
            assert e.trainer_reward == pytest.approx(e.total_reward or 0.0)
        return [(e.train_step, e.group_id, e.group_index, e.trainer_reward, e.finish_reason, e.step_count)
                for e in eps]  # type: ignore[misc]


def test_word_game_on_ours_and_on_published_010(tiny_model: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    got = {}
    for side, serving in (("ours", serving_ours), ("published", serving_published)):
        with serving(GAME) as url:
            URL["game"] = url
            got[side] = _train(tiny_model, tmp_path / side, WordGameEnv, f"word-{side}")
    assert got["ours"] == got["published"]
    rows = got["ours"]
    assert [(s, g, i) for s, g, i, *_ in rows] == [(s, g, i) for s in (0, 1) for g in ("0", "1") for i in (0, 1)]
    assert {r[4] for r in rows if r[3] == 1.0} == {"env_done"} and any(r[3] == 1.0 for r in rows)
    assert {r[4] for r in rows if r[3] != 1.0} <= {"stop", "truncated", "env_error"}
    assert [r[4] for r in rows].count("env_error") == 2 and all(r[5] == 0 for r in rows if r[4] == "env_error")


def test_an_environment_that_never_resets_its_session_is_recorded(tiny_model: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from openenv.recording import EpisodeStore

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    with serving_published(GAME) as url:  # 0.10 steps a session that was never reset
        URL["game"] = url
        rows = _train(tiny_model, tmp_path, NeverResetEnv, "never-reset")
    assert len(rows) == 8 and all(r[5] == (r[4] != "env_error") for r in rows)  # one step each, in its own episode
    with EpisodeStore(tmp_path / "runs.db") as store:
        (run,), _ = store.list_training_runs()
        for e in store.iter_episodes():
            first = store.load_steps(e.id, limit=1)[0]
            assert first.index == 0 and first.observation is None and e.training_run_id == run.id
            assert store.get_episode(e.id).reset_kwargs is None  # started without a reset
