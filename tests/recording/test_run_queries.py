"""Run read queries on SQLite and PostgreSQL alike: a run's per-step aggregates, a step's groups,
a group's rollouts, labelled runs sliced by episode order, run comparison, the listing's sorts."""

from __future__ import annotations

import time

from sqlalchemy import insert

from openenv.recording import EpisodeFilter, EpisodeStore
from openenv.recording import run_compare as rc
from openenv.recording import run_queries as rq
from openenv.recording.models import EnvRun, Episode, TrainingRun

RUN = "a" * 32


def _fill(store: EpisodeStore) -> None:
    """A run of 3 steps x 2 groups x 3 rollouts (group g0 of every step tied at 0) and 20 labelled
    eval episodes on seeds 0..4."""
    now = time.time()
    rows = []
    for step in range(3):
        for g in range(2):
            for i in range(3):
                reward = 0.0 if g == 0 else float(i == step % 3)
                rows.append({"id": f"{step}{g}{i}".ljust(32, "0"), "run_id": "e" * 32, "env_name": "repl",
                             "source": "model", "label": "train", "reset_kwargs": "{}", "seed": g,
                             "started_at": now + len(rows), "ended_at": now + len(rows) + 1, "end_reason": "done",
                             "step_count": i + 1, "total_reward": reward, "done": True, "training_run_id": RUN,
                             "train_step": step, "group_id": f"s{step}g{g}", "group_index": i,
                             "finish_reason": "env_error" if i == 2 else "env_done", "trainer_reward": reward,
                             "advantage": reward - 0.3})  # fmt: skip
    for k in range(20):
        rows.append({"id": f"f{k:031d}", "run_id": "e" * 32, "env_name": "repl", "source": "model",
                     "label": "eval-1", "reset_kwargs": "{}", "seed": k % 5, "started_at": now + 100 + k,
                     "ended_at": None if k == 19 else now + 101 + k, "end_reason": None if k == 19 else "done",
                     "step_count": 2, "total_reward": float(k % 2), "done": k != 19, "training_run_id": None,
                     "train_step": None, "group_id": None, "group_index": None, "finish_reason": None,
                     "trainer_reward": None, "advantage": None})  # fmt: skip

    def tx(conn) -> None:  # noqa: ANN001
        conn.execute(insert(EnvRun.__table__), [{"id": "e" * 32, "env_name": "repl", "source": "model",
                                                 "label": "eval-1", "created_at": now}])  # fmt: skip
        conn.execute(insert(TrainingRun.__table__), [{"id": RUN, "name": "grpo", "trainer": "trl", "env_name": "repl",
                                                      "status": "finished", "started_at": now}])  # fmt: skip
        conn.execute(insert(Episode.__table__), rows)

    store.write(tx)


def test_run_views_read_alike_on_every_dialect(any_store: EpisodeStore) -> None:
    _fill(any_store)
    with any_store.engine.connect() as conn:
        runs = rq.list_runs(conn)
        assert [r.key for r in runs if r.training] == [RUN] and "label:eval-1" in [r.key for r in runs]
        steps = rq.run_steps(conn, rq.RunScope(RUN))
        assert [s.x for s in steps] == [0, 1, 2] and all(s.n == 6 for s in steps)
        assert steps[0].groups == 2 and steps[0].zero_spread == 1
        assert steps[1].reasons == {"env_done": 4, "env_error": 2} and steps[1].env_errors == 2
        assert abs(steps[1].mean - 1 / 6) < 1e-9 and steps[1].max == 1.0 and abs(steps[1].success - 1 / 6) < 1e-9
        assert rq.run_trend(conn, rq.RunScope(RUN))[0] == 18
        groups = rq.step_groups(conn, rq.RunScope(RUN), 1)
        assert [g.group for g in groups] == ["s1g0", "s1g1"] and groups[0].spread == 0
        group = rq.group_episodes(conn, rq.RunScope(RUN), "s1g1", step=1)
        assert [e.trainer_reward for e in group] == [1.0, 0.0, 0.0] and group[0].group_index == 1
        label = rq.RunScope("label:eval-1")
        sliced = rq.run_steps(conn, label)
        assert sum(s.n for s in sliced) == 20 and sum(s.live for s in sliced) == 1
        assert [e.seed for e in rq.group_episodes(conn, label, "3")] == [3] * 4
        seeds = rc.compare_seeds(conn, rq.RunScope(RUN), label)
        assert [r.seed for r in seeds[:2]] == [0, 1] and seeds[0].a.n == 9 and seeds[0].b.n == 4
        hist = rc.reward_histograms(conn, rq.RunScope(RUN), label, bins=4)
        assert sum(hist.a) == 18 and sum(hist.b) == 20
        stats = rq.filter_stats(conn, EpisodeFilter(training_run_id=RUN))
        assert stats.count == 18 and stats.finished == 18
    got = any_store.list_episodes(EpisodeFilter(training_run_id=RUN), sort="reward", limit=4)
    assert [e.trainer_reward for e in got.items] == [1.0, 1.0, 1.0, 0.0]
    rest = any_store.list_episodes(EpisodeFilter(training_run_id=RUN), sort="reward", limit=100, cursor=got.next_cursor)
    assert len(rest.items) == 14
    few = any_store.list_episodes(EpisodeFilter(label="eval-1", min_length=2, max_length=2), limit=100)
    assert len(few.items) == 20  # the live one included
