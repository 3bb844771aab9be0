"""``openenv episodes``: list, show, export, import, re-run, fork and delete recorded episodes.

The store is ``--db`` (a SQLite path or a ``postgresql://`` URL), else the default store the studio
and ``openenv rollout`` use too (``$OPENENV_EPISODES_DB``, else the studio's database:
``openenv.recording.default_store``). Episode ids may be shortened to any unique prefix.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from openenv.core.errors import OpenEnvError
from openenv.recording import (
    EpisodeFilter,
    EpisodeRecord,
    EpisodeStore,
    export_jsonl,
    export_parquet,
    fork_sync,
    import_jsonl,
    import_parquet,
    rerun_sync,
)
from openenv.recording.default_store import DEFAULT_STORE_ENV, default_store_target
from openenv.recording.episode_format import episode_to_dict

__all__ = ["episodes"]

_DATES = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M"]


@contextmanager
def _errors() -> Iterator[None]:
    """Our errors become one-line CLI errors (exit 1), never a traceback."""
    try:
        yield
    except OpenEnvError as exc:
        raise click.ClickException(f"{exc} [{exc.code}]") from exc
    except OSError as exc:
        raise click.ClickException(str(exc)) from exc


def _store(ctx: click.Context) -> EpisodeStore:
    target = ctx.obj.get("db") or default_store_target()
    with _errors():
        store = EpisodeStore(target)
    ctx.call_on_close(store.close)
    return store


def _filters(f: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--env", help="Environment name."),
        click.option("--source", help="programmatic or human."),
        click.option("--label", help="Agent/run label."),
        click.option("--tag", help="Episodes carrying this tag."),
        click.option("--since", type=click.DateTime(_DATES), help="Started at/after (UTC)."),
        click.option("--until", type=click.DateTime(_DATES), help="Started before (UTC)."),
        click.option("--min-return", type=float),
        click.option("--max-return", type=float),
        click.option("--min-length", type=int, help="At least this many steps."),
        click.option("--max-length", type=int),
        click.option(
            "--finished/--unfinished", default=None, help="Ended cleanly, or left open (crashed/live)."
        ),
        click.option("--seed", type=int, help="Reset with this seed."),
        click.option("--run", "training_run", help="Rollouts of this training run (id, id prefix or name)."),
        click.option("--step", "train_step", help="Training step N, or a range A..B (either end may be left out)."),
        click.option("--group", "group_id", help="Prompt group (GRPO) within the step."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _steps(text: str | None) -> tuple[int | None, int | None]:
    """``N`` or ``A..B`` (``A..``, ``..B``) as an inclusive range of training steps."""
    if text is None:
        return None, None
    lo, sep, hi = text.strip().partition("..")
    try:
        first = int(lo) if lo.strip() else None
        last = (int(hi) if hi.strip() else None) if sep else first
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a step N or a range A..B", param_hint="--step") from None
    if (first is not None and first < 0) or (first is not None and last is not None and last < first):
        raise click.BadParameter(f"{text!r}: steps are >= 0 and A <= B", param_hint="--step")
    return first, last


def _filter(kw: dict[str, Any], store: EpisodeStore) -> EpisodeFilter:
    names = ("env", "source", "label", "tag", "since", "until", "min_return", "max_return", "min_length",
             "max_length", "finished", "seed", "group_id")  # fmt: skip
    step_min, step_max = _steps(kw.pop("train_step"))
    run = kw.pop("training_run")
    run_id = store.get_training_run(run).id if run else None
    if run_id is None and (step_min is not None or step_max is not None or kw.get("group_id") is not None):
        raise click.UsageError("--step and --group select within a training run: give --run too")
    return EpisodeFilter(**{n: kw.pop(n) for n in names}, training_run_id=run_id, step_min=step_min,
                         step_max=step_max)  # fmt: skip


def _when(t: float | None) -> str:
    return "-" if t is None else datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _status(e: EpisodeRecord) -> str:
    return e.end_reason or "unfinished"


def _short(value: Any, width: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _progress(label: str, quiet: bool) -> tuple[Callable[[int, int | None], None], Callable[[], None]]:
    """An on_progress callback drawing on stderr, and its finisher."""
    if quiet:
        return (lambda done, total: None), (lambda: None)

    def show(done: int, total: int | None) -> None:
        if done % 25 == 0 or done == total:
            click.echo(
                f"\r{label}: {done}/{total if total is not None else '?'} episodes", nl=False, err=True
            )

    return show, lambda: click.echo("", err=True)


@click.group()
@click.option("--db", envvar=DEFAULT_STORE_ENV, help="Store: SQLite path or postgresql:// URL.")
@click.pass_context
def episodes(ctx: click.Context, db: str | None) -> None:
    """Recorded episodes: list, show, export, import, rerun, fork, delete."""
    ctx.ensure_object(dict)["db"] = db


@episodes.command("list")
@_filters
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1000))
@click.option("--cursor", help="Continue after a previous page (printed at its end).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@click.pass_context
def list_cmd(ctx: click.Context, limit: int, cursor: str | None, as_json: bool, **kw: Any) -> None:
    """List episodes, newest first."""
    store = _store(ctx)
    with _errors():
        flt = _filter(kw, store)
        page = store.list_episodes(flt, limit=limit, cursor=cursor)
    if as_json:
        for e in page.items:
            row = {
                k: getattr(e, k)
                for k in (
                    "id",
                    "env_name",
                    "source",
                    "label",
                    "seed",
                    "started_at",
                    "ended_at",
                    "end_reason",
                    "step_count",
                    "total_reward",
                    "done",
                    *TRAINING_FIELDS,
                )
            }
            click.echo(json.dumps({**row, "tags": list(e.tags)}))
    elif flt.training_run_id is not None:
        _list_rollouts(page.items)
    else:
        click.echo(f"{'ID':12}  {'STARTED (UTC)':19}  {'ENV':12} {'SOURCE':12} {'LABEL':16} {'STEPS':>6} "
                   f"{'RETURN':>9}  STATUS")  # fmt: skip
        for e in page.items:
            ret = "-" if e.total_reward is None else f"{e.total_reward:.4g}"
            click.echo(f"{e.id[:12]}  {_when(e.started_at)}  {_short(e.env_name, 12):12} {e.source[:12]:12} "
                       f"{_short(e.label or '-', 16):16} {e.step_count:>6} {ret:>9}  {_status(e)}")  # fmt: skip
        if not page.items:
            click.echo("(no episodes)")
    if page.next_cursor:
        click.echo(f"more: --cursor '{page.next_cursor}'", err=True)


TRAINING_FIELDS = ("training_run_id", "train_step", "group_id", "group_index", "trainer_reward", "reward_components",
                   "advantage", "finish_reason")  # fmt: skip


def _list_rollouts(items: list[EpisodeRecord]) -> None:
    """A training run's rollouts: step, group, index, the trainer's reward and advantage."""
    click.echo(f"{'ID':12}  {'STEP':>5} {'GROUP':>6} {'IDX':>4} {'REWARD':>9} {'ADV':>8} {'ENV RET':>8} {'STEPS':>5}  "
               f"{'FINISH':10} STATUS")  # fmt: skip
    for e in items:
        def num(v: float | None) -> str:
            return "-" if v is None else f"{v:.4g}"

        step = "-" if e.train_step is None else str(e.train_step)
        index = "-" if e.group_index is None else str(e.group_index)
        click.echo(f"{e.id[:12]}  {step:>5} {_short(e.group_id or '-', 6):>6} {index:>4} {num(e.trainer_reward):>9} "
                   f"{num(e.advantage):>8} {num(e.total_reward):>8} {e.step_count:>5}  {e.finish_reason or '-':10} "
                   f"{_status(e)}")  # fmt: skip
    if not items:
        click.echo("(no episodes)")


@episodes.command()
@click.argument("episode_id")
@click.option("--start", default=0, show_default=True, type=click.IntRange(0), help="First step shown.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(0), help="Steps shown (0: none).")
@click.option("--json", "as_json", is_flag=True, help="The episode in the export format.")
@click.pass_context
def show(ctx: click.Context, episode_id: str, start: int, limit: int, as_json: bool) -> None:
    """Show one episode and a page of its steps."""
    store = _store(ctx)
    with _errors():
        ep = store.get_episode(store.resolve_id(episode_id))
        steps = store.load_steps(ep.id, start=start, limit=limit) if limit else []
    if as_json:
        click.echo(json.dumps(episode_to_dict(ep, steps), ensure_ascii=False, indent=2))
        return
    run = ep.run
    facts = [
        ("episode", ep.id), ("env", f"{ep.env_name} {run.env_version or ''}".strip() if run else ep.env_name),
        ("where", " ".join(x for x in (run.base_url, run.provider, run.image) if x) if run else "-"),
        ("source", f"{ep.source} / {ep.label or '-'}"), ("reset", json.dumps(ep.reset_kwargs)),
        ("started", _when(ep.started_at)), ("ended", f"{_when(ep.ended_at)} ({_status(ep)})"),
        ("steps", str(ep.step_count)), ("return", "-" if ep.total_reward is None else f"{ep.total_reward:.6g}"),
        ("tags", ", ".join(ep.tags) or "-"), ("notes", ep.notes or "-"),
    ]  # fmt: skip
    if ep.training_run_id:
        facts.append(("training", f"run {ep.training_run_id[:12]} step {ep.train_step} group {ep.group_id} index "
                                  f"{ep.group_index}: reward {ep.trainer_reward} advantage {ep.advantage} "
                                  f"({ep.finish_reason or '-'})"))  # fmt: skip
    if ep.parent_episode_id:
        facts.append(("fork", f"forked from {ep.parent_episode_id[:12]} at step {ep.fork_step}"))
    with _errors():
        forks = store.list_forks(ep.id)
    if forks:
        facts.append(("forks", ", ".join(f"{f.id[:12]} (at {f.fork_step})" for f in forks)))
    for name, value in facts:
        click.echo(f"{name:>8}: {value}")
    if steps:
        click.echo(f"\n{'IDX':>5} {'REWARD':>8} {'DONE':5} {'ACTION':30} OBSERVATION")
        for s in steps:
            reward = "-" if s.reward is None else f"{s.reward:.4g}"
            action = "(reset)" if s.index == 0 else _short(s.action, 30)
            click.echo(
                f"{s.index:>5} {reward:>8} {str(s.done).lower():5} {action:30} {_short(s.observation, 60)}"
            )
        if steps[-1].index < ep.step_count:
            click.echo(f"... more: --start {steps[-1].index + 1}", err=True)


def _format(path: str, fmt: str | None) -> str:
    return fmt or ("parquet" if Path(path).suffix.lower() in (".parquet", ".pq") else "jsonl")


@episodes.command("export")
@click.argument("dest")
@_filters
@click.option("--id", "ids", multiple=True, help="Export these episodes (repeatable) instead of a filter.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "parquet", "training", "training-table"]),
              help="Default: by file suffix. training: one rollout document per line (token capture); "
                   "training-table: one row per trainable sequence (Parquet by suffix, else JSONL).")
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
@click.pass_context
def export_cmd(
    ctx: click.Context, dest: str, ids: tuple[str, ...], fmt: str | None, quiet: bool, **kw: Any
) -> None:
    """Export episodes to DEST (JSONL, '-' for stdout, or Parquet)."""
    store = _store(ctx)
    on_progress, finish = _progress("exported", quiet)
    with _errors():
        chosen = [store.resolve_id(i) for i in ids] if ids else None
        filters = _filter(kw, store)
        if fmt in ("training", "training-table"):
            from openenv.capture.export import export_training, export_training_table

            out = sys.stdout if dest == "-" else dest
            if fmt == "training":
                n = export_training(store, out, filters=filters, episode_ids=chosen)
                click.echo(f"exported {n} rollout document(s)", err=True)
            else:
                table = "parquet" if Path(dest).suffix.lower() in (".parquet", ".pq") else "jsonl"
                n = export_training_table(store, out, fmt=table, filters=filters, episode_ids=chosen)
                click.echo(f"exported {n} trainable sequence(s)", err=True)
            return
        if _format(dest, fmt) == "parquet":
            n = export_parquet(store, dest, filters=filters, episode_ids=chosen, on_progress=on_progress)
        elif dest == "-":
            n = export_jsonl(store, sys.stdout, filters=filters, episode_ids=chosen, on_progress=on_progress)
        else:
            n = export_jsonl(store, dest, filters=filters, episode_ids=chosen, on_progress=on_progress)
    finish()
    click.echo(f"exported {n} episode(s)", err=True)


@episodes.command("import")
@click.argument("src")
@click.option(
    "--on-conflict", type=click.Choice(["skip", "error", "replace"]), default="skip", show_default=True
)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "parquet"]), help="Default: by file suffix.")
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
@click.pass_context
def import_cmd(ctx: click.Context, src: str, on_conflict: str, fmt: str | None, quiet: bool) -> None:
    """Import episodes from SRC (JSONL, '-' for stdin, or Parquet)."""
    store = _store(ctx)
    on_progress, finish = _progress("imported", quiet)
    with _errors():
        if _format(src, fmt) == "parquet":
            result = import_parquet(store, src, on_conflict=on_conflict, on_progress=on_progress)  # type: ignore[arg-type]
        else:
            source: Any = sys.stdin.buffer if src == "-" else src
            result = import_jsonl(store, source, on_conflict=on_conflict, on_progress=on_progress)  # type: ignore[arg-type]
    finish()
    click.echo(f"imported {result.imported} episode(s), skipped {result.skipped} already present")


@episodes.command()
@click.argument("episode_id")
@click.option("--url", required=True, help="Base URL of a server running the same environment.")
@click.pass_context
def rerun(ctx: click.Context, episode_id: str, url: str) -> None:
    """Re-run an episode's actions on a fresh session; exit 2 at the first divergence."""
    from openenv.core.generic_client import GenericEnvClient

    store = _store(ctx)
    with _errors():
        eid = store.resolve_id(episode_id)
        with GenericEnvClient(base_url=url).sync() as client:
            report = rerun_sync(store, eid, client)
    click.echo(report.describe())
    if report.observation_diff is not None:
        for kind in ("changed", "added", "removed"):
            for c in getattr(report.observation_diff, kind)[:20]:
                click.echo(
                    f"  {kind:8} {c.path or '<root>'}: {_short(c.before, 40)} -> {_short(c.after, 40)}"
                )
                if c.text_diff:
                    click.echo("    " + c.text_diff.replace("\n", "\n    ").rstrip())
    if not report.deterministic:
        ctx.exit(2)


@episodes.command()
@click.argument("episode_id")
@click.option("--step", "fork_step", required=True, type=click.IntRange(0), help="Continue after this step.")
@click.option("--url", required=True, help="Base URL of a server running the same environment.")
@click.option("--keep-going", is_flag=True, help="Replay every step up to --step even after a divergence.")
@click.option("--label", help="Label of the new episode (default: the parent's).")
@click.option("--json", "as_json", is_flag=True, help="The fork report as JSON.")
@click.pass_context
def fork(ctx: click.Context, episode_id: str, fork_step: int, url: str, keep_going: bool, label: str | None,
         as_json: bool) -> None:  # fmt: skip
    """Fork an episode at a step: replay its actions up to it on a fresh session (a new episode
    linked to its parent); exit 2 at a divergence (stopped there unless --keep-going)."""
    from openenv.core.generic_client import GenericEnvClient

    store = _store(ctx)
    with _errors():
        eid = store.resolve_id(episode_id)
        options = {"label": label} if label else {}
        with GenericEnvClient(base_url=url).sync() as client:
            report = fork_sync(store, eid, client, step=fork_step, keep_going=keep_going, **options).report
        store.flush()
    if as_json:
        d = report.divergence
        click.echo(json.dumps({
            "parent_id": report.parent_id, "episode_id": report.episode_id, "fork_step": report.fork_step,
            "replayed": report.replayed, "complete": report.complete, "divergences": report.divergences,
            "diverged_at": d.diverged_at if d else None, "field": d.field if d else None,
        }))  # fmt: skip
    else:
        click.echo(report.describe())
        if report.divergence is not None and report.divergence.observation_diff is not None:
            click.echo("  " + report.divergence.observation_diff.summary())
    if report.diverged:
        ctx.exit(2)


@episodes.command()
@click.argument("episode_ids", nargs=-1, required=True)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def delete(ctx: click.Context, episode_ids: tuple[str, ...], yes: bool) -> None:
    """Delete episodes (with their steps and tags)."""
    store = _store(ctx)
    with _errors():
        ids = [store.resolve_id(i) for i in episode_ids]
    if not yes:
        click.confirm(f"Delete {len(ids)} episode(s)?", abort=True)
    with _errors():
        n = store.delete_episodes(ids)
    click.echo(f"deleted {n} episode(s)")
