"""``openenv runs``: training runs in the episode store: list, show (per training step), export.

A run is given by its id, a unique id prefix, or its name (the newest run of that name). The
store is ``--db`` or the default store, as for ``openenv episodes``. Each run's rollouts are
listed with ``openenv episodes list --run RUN --step A..B --group G``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from openenv.recording.default_store import DEFAULT_STORE_ENV
from openenv.recording.training_runs import TrainingRunRecord

from .episodes import _errors, _short, _store, _when

__all__ = ["runs"]


def _num(value: float | None, fmt: str = ".4g") -> str:
    return "-" if value is None else format(value, fmt)


@click.group()
@click.option("--db", envvar=DEFAULT_STORE_ENV, help="Store: SQLite path or postgresql:// URL.")
@click.pass_context
def runs(ctx: click.Context, db: str | None) -> None:
    """Training runs: list, show, export."""
    ctx.ensure_object(dict)["db"] = db


@runs.command("list")
@click.option("--name", help="Only runs with this name.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 500))
@click.option("--cursor", help="Continue after a previous page (printed at its end).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@click.pass_context
def list_cmd(ctx: click.Context, name: str | None, limit: int, cursor: str | None, as_json: bool) -> None:
    """List training runs, newest first, with their rollout counts."""
    store = _store(ctx)
    with _errors():
        items, more = store.list_training_runs(limit=limit, cursor=cursor, name=name)
    if as_json:
        for r in items:
            click.echo(json.dumps(asdict(r)))
    else:
        click.echo(f"{'ID':12}  {'NAME':20} {'TRAINER':8} {'STATUS':9} {'STARTED (UTC)':19}  {'STEPS':>5} "
                   f"{'ROLLOUTS':>8} {'REWARD':>8} {'OPEN':>5}")  # fmt: skip
        for r in items:
            click.echo(f"{r.id[:12]}  {_short(r.name, 20):20} {r.trainer[:8]:8} {r.status:9} {_when(r.started_at)}  "
                       f"{r.steps:>5} {r.episodes:>8} {_num(r.reward_mean):>8} {r.unfinished:>5}")  # fmt: skip
        if not items:
            click.echo("(no training runs)")
    if more:
        click.echo(f"more: --cursor '{more}'", err=True)


def _facts(r: TrainingRunRecord) -> list[tuple[str, str]]:
    status = r.status if r.status == r.stored_status else f"{r.status} (said {r.stored_status}; pid {r.pid} is gone)"
    return [
        ("run", r.id), ("name", r.name), ("trainer", r.trainer), ("env", r.env_name or "-"), ("status", status),
        ("started", _when(r.started_at)), ("ended", _when(r.ended_at)), ("host", f"{r.hostname or '-'} pid {r.pid}"),
        ("steps", f"{r.steps} (last {r.last_step if r.last_step is not None else '-'})"),
        ("rollouts", f"{r.episodes} ({r.unfinished} unfinished)"), ("reward", _num(r.reward_mean)),
    ]  # fmt: skip


@runs.command()
@click.argument("run")
@click.option("--json", "as_json", is_flag=True, help="The run and its steps as JSON.")
@click.pass_context
def show(ctx: click.Context, run: str, as_json: bool) -> None:
    """Show a run and, per training step, its rollouts, groups, rewards and finish reasons."""
    store = _store(ctx)
    with _errors():
        record = store.get_training_run(run)
        steps = store.training_steps(record.id)
    if as_json:
        click.echo(json.dumps({**asdict(record), "per_step": [asdict(s) for s in steps]}, indent=2))
        return
    for name, value in _facts(record):
        click.echo(f"{name:>8}: {value}")
    if record.config:
        keys = ("learning_rate", "num_generations", "per_device_train_batch_size", "max_steps", "max_completion_length")
        shown = {k: record.config[k] for k in keys if k in record.config}
        click.echo(f"{'config':>8}: {json.dumps(shown) if shown else _short(record.config, 100)}")
    if not steps:
        click.echo("\n(no rollouts recorded)")
        return
    click.echo(f"\n{'STEP':>5} {'ROLLOUTS':>8} {'GROUPS':>6} {'REWARD':>8} {'MIN':>8} {'MAX':>8} {'ENV RET':>8} "
               f"{'LEN':>5}  FINISH")  # fmt: skip
    for s in steps:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(s.finish_reasons.items(), key=lambda kv: -kv[1]))
        step = "-" if s.step is None else str(s.step)
        click.echo(f"{step:>5} {s.episodes:>8} {s.groups:>6} {_num(s.reward_mean):>8} {_num(s.reward_min):>8} "
                   f"{_num(s.reward_max):>8} {_num(s.env_return_mean):>8} {_num(s.length_mean, '.3g'):>5}  "
                   f"{reasons}{f' ({s.unfinished} open)' if s.unfinished else ''}")  # fmt: skip


@runs.command("export")
@click.argument("run")
@click.argument("dest")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "parquet"]), help="Default: by DEST's suffix.")
@click.pass_context
def export_cmd(ctx: click.Context, run: str, dest: str, fmt: str | None) -> None:
    """Export RUN as a training table (one row per rollout) to DEST (JSONL, '-' for stdout, or Parquet)."""
    from openenv.recording.run_export import export_run

    fmt = fmt or ("parquet" if Path(dest).suffix.lower() in (".parquet", ".pq") else "jsonl")
    if fmt == "parquet" and dest == "-":
        raise click.UsageError("Parquet needs a file: give DEST a path")
    store = _store(ctx)
    with _errors():
        out: Any = sys.stdout if dest == "-" else dest
        n = export_run(store, run, out, fmt=fmt)
    click.echo(f"exported {n} rollout(s)", err=True)
