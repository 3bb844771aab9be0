"""The plain training-run API (a custom loop against the real echo server) and what a user sees
afterwards: ``openenv runs list|show|export`` and ``openenv episodes list --run --step --group
--seed``; bad input gets a one-line error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from openenv.cli.main import cli
from openenv.envs.echo import EchoAction, EchoEnv
from openenv.recording import EpisodeStore
from openenv.training import TrainingRun

G = 3
WORDS = ["a", "bb", "ccc"]


def _loop(db: Path, url: str, *, steps: int = 2) -> str:
    """A custom GRPO-shaped loop: per step, G rollouts of each prompt; rewards and advantages after."""
    with TrainingRun(str(db), "custom-echo", trainer="custom", config={"G": G}) as run:
        env = run.record(EchoEnv(base_url=url).sync())
        for step in range(steps):
            ids: list[tuple[str, float]] = []
            for group, word in enumerate(WORDS):
                for index in range(G):
                    run.tag(env, step=step, group=group, index=index)
                    env.reset(seed=group)
                    result = env.step(EchoAction(message=word * (index + 1)))
                    ids.append((env.episode_id, float(result.reward)))
            rewards = [r for _, r in ids]
            mean = sum(rewards) / len(rewards)
            run.outcomes([{"episode_id": eid, "trainer_reward": r, "reward_components": {"echo": r},
                           "advantage": r - mean, "finish_reason": "stop"} for eid, r in ids])  # fmt: skip
            for eid, _ in ids[:1]:
                run.store.record_turn(eid, 2, "model", {"prompt": [{"role": "user", "content": "say a"}],
                                                        "completion": "a", "capture": {"prompt_ids": [1, 2, 3],
                                                        "sampled_ids": [4, 5], "logprobs": [-0.5, -0.25],
                                                        "loss_mask": [1, 1]}})  # fmt: skip
        env.close()
        return run.id


def cli_run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_a_custom_loop_in_the_cli_and_exported(tmp_path: Path, echo_url: str) -> None:
    db = tmp_path / "runs.db"
    run_id = _loop(db, echo_url)
    code, out, _ = cli_run("runs", "--db", str(db), "list")
    assert code == 0 and run_id[:12] in out and "finished" in out and "custom-echo" in out
    assert out.splitlines()[1].split()[-4:-2] == ["2", "18"]  # steps, rollouts
    code, out, _ = cli_run("runs", "--db", str(db), "show", "custom-echo")
    assert code == 0 and "STEP" in out and "stop 9" in out
    lines = [line.split() for line in out.splitlines() if line.strip().startswith(("0 ", "1 "))]
    assert [row[:3] for row in lines] == [["0", "9", "3"], ["1", "9", "3"]]
    code, out, _ = cli_run("runs", "--db", str(db), "show", run_id[:8], "--json")
    assert json.loads(out)["per_step"][1]["episodes"] == 9

    code, out, _ = cli_run("episodes", "--db", str(db), "list", "--run", "custom-echo", "--step", "1..1",
                           "--group", "2", "--json")  # fmt: skip
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(rows) == 3 and {r["group_index"] for r in rows} == {0, 1, 2}
    assert all(r["train_step"] == 1 and r["group_id"] == "2" and r["trainer_reward"] > 0 for r in rows)
    code, out, _ = cli_run("episodes", "--db", str(db), "list", "--run", run_id, "--step", "..0", "--seed", "1")
    assert code == 0 and "ADV" in out and len(out.splitlines()) == 1 + 3

    dest = tmp_path / "run.jsonl"
    code, _, err = cli_run("runs", "--db", str(db), "export", "custom-echo", str(dest))
    table = [json.loads(line) for line in dest.read_text().splitlines()]
    assert code == 0 and "18 rollout" in err and len(table) == 18
    assert [(r["step"], r["group"], r["index"]) for r in table[:4]] == [(0, "0", 0), (0, "0", 1), (0, "0", 2), (0, "1", 0)]
    first = table[0]
    assert first["completion_ids"] == [4, 5] and first["logprobs"] == [-0.5, -0.25] and first["loss_mask"] == [1, 1]
    assert json.loads(first["prompt"]) == [{"role": "user", "content": "say a"}]
    assert table[1]["completion_ids"] is None and table[1]["env_steps"] == 1
    assert json.loads(table[2]["reward_components"]) == {"echo": pytest.approx(table[2]["trainer_reward"])}

    pq = pytest.importorskip("pyarrow.parquet")
    dest = tmp_path / "run.parquet"
    code, _, _ = cli_run("runs", "--db", str(db), "export", "custom-echo", str(dest))
    read = pq.read_table(dest).to_pylist()
    assert code == 0 and len(read) == 18 and read[0]["completion_ids"] == [4, 5] and read[0]["loss_mask"] == [1, 1]


def test_bad_input_gets_clear_errors(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    EpisodeStore(db).close()
    code, out, _ = cli_run("runs", "--db", str(db), "list")
    assert code == 0 and "(no training runs)" in out
    for args, says in (
        (("runs", "--db", str(db), "show", "nope"), "no training run 'nope'"),
        (("runs", "--db", str(db), "export", "nope", "-"), "no training run"),
        (("runs", "--db", str(db), "export", "x", "-", "--format", "parquet"), "Parquet needs a file"),
        (("runs", "--db", str(db), "list", "--cursor", "zz"), "bad listing cursor"),
        (("episodes", "--db", str(db), "list", "--step", "3"), "give --run too"),
        (("episodes", "--db", str(db), "list", "--run", "x", "--step", "b..a"), "not a step"),
        (("episodes", "--db", str(db), "list", "--run", "x", "--step", "5..2"), "A <= B"),
        (("episodes", "--db", str(db), "list", "--run", "nope"), "no training run"),
    ):
        code, out, err = cli_run(*args)
        assert code != 0 and says in out + err and "Traceback" not in out + err, (args, out, err)


def test_training_fields_survive_export_and_import(tmp_path: Path, echo_url: str) -> None:
    from openenv.recording import EpisodeFilter, export_jsonl, export_parquet, import_jsonl, import_parquet

    db = tmp_path / "runs.db"
    run_id = _loop(db, echo_url, steps=1)
    code, out, _ = cli_run("episodes", "--db", str(db), "list", "--run", run_id, "--json", "--limit", "1")
    shown = json.loads(out.splitlines()[0])["id"]
    code, out, _ = cli_run("episodes", "--db", str(db), "show", shown)
    assert code == 0 and f"run {run_id[:12]} step 0 group" in out
    with EpisodeStore(db) as src:
        want = {e.id: e for e in src.iter_episodes(EpisodeFilter(training_run_id=run_id))}
        export_jsonl(src, tmp_path / "e.jsonl")
        export_parquet(src, tmp_path / "e.parquet")
    for name, load in (("j.db", lambda s: import_jsonl(s, tmp_path / "e.jsonl")),
                       ("p.db", lambda s: import_parquet(s, tmp_path / "e.parquet"))):  # fmt: skip
        with EpisodeStore(tmp_path / name) as dst:
            load(dst)
            for eid, e in want.items():
                got = dst.get_episode(eid)
                assert (got.training_run_id, got.train_step, got.group_id, got.group_index, got.trainer_reward,
                        got.reward_components, got.advantage, got.finish_reason) == (
                        e.training_run_id, e.train_step, e.group_id, e.group_index, e.trainer_reward,
                        e.reward_components, e.advantage, e.finish_reason)  # fmt: skip
