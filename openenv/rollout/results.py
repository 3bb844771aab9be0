"""Per-episode results of a rollout and their summary (mean/spread of return, success, pass@k)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["EpisodeResult", "format_table", "pass_at_k", "summarise"]


@dataclass
class EpisodeResult:
    """One episode of a rollout, updated live while it runs (``status``: pending, running, finished,
    skipped)."""

    index: int
    seed: int | None
    status: str = "pending"
    episode_id: str | None = None
    steps: int = 0
    total_reward: float = 0.0
    done: bool = False
    success: bool = False
    end_reason: str | None = None
    error: str | None = None
    invalid_replies: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_ms: list[float] = field(default_factory=list)
    started_at: float | None = None
    ended_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["model_ms"] = round(sum(self.model_ms), 3)
        return out


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimate for ``c`` successes among ``n`` samples (Chen et al. 2021)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _spread(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "std": None, "min": None, "max": None}
    return {
        "mean": statistics.fmean(values),
        "std": statistics.pstdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
    }


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def summarise(results: list[EpisodeResult], *, wall_s: float | None = None) -> dict[str, Any]:
    """The results table as a dict (``--json``): counts, return, success, pass@k over seeds, steps,
    tokens, model latency, and env steps/s when ``wall_s`` is given."""
    ran = [r for r in results if r.status == "finished"]
    returns = [r.total_reward for r in ran]
    by_seed: dict[Any, list[EpisodeResult]] = defaultdict(list)
    for r in ran:
        by_seed[r.seed].append(r)
    samples = min((len(v) for v in by_seed.values()), default=0)
    pass_k: dict[str, float] = {}
    for k in sorted({1, samples}) if by_seed else ():
        if k >= 1:
            pass_k[f"pass@{k}"] = statistics.fmean(
                pass_at_k(len(v), sum(x.success for x in v), k) for v in by_seed.values()
            )
    latencies = [ms for r in ran for ms in r.model_ms]
    steps = sum(r.steps for r in ran)
    reasons: dict[str, int] = defaultdict(int)
    for r in ran:
        reasons[r.end_reason or "unknown"] += 1
    out: dict[str, Any] = {
        "episodes": len(results),
        "finished": len(ran),
        "skipped": sum(r.status == "skipped" for r in results),
        "errors": sum(r.error is not None for r in results),
        "return": _spread(returns),
        "success_rate": (sum(r.success for r in ran) / len(ran)) if ran else None,
        "seeds": len(by_seed),
        "samples_per_seed": samples,
        "pass_at_k": pass_k,
        "steps": {"total": steps, "mean": (steps / len(ran)) if ran else None},
        "invalid_replies": sum(r.invalid_replies for r in ran),
        "tokens": {
            "prompt": sum(r.prompt_tokens for r in results),
            "completion": sum(r.completion_tokens for r in results),
        },
        "model_latency_ms": {
            "mean": statistics.fmean(latencies) if latencies else None,
            "p50": _percentile(latencies, 0.5),
            "p95": _percentile(latencies, 0.95),
        },
        "end_reasons": dict(sorted(reasons.items())),
    }
    if wall_s is not None:
        out["wall_s"] = wall_s
        out["env_steps_per_s"] = steps / wall_s if wall_s > 0 else None
    return out


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_table(summary: dict[str, Any], label: str | None = None) -> str:
    """The summary as a plain-text table for a terminal."""
    r, lat = summary["return"], summary["model_latency_ms"]
    rows = [
        ("run", label or "-"),
        ("episodes", f"{summary['finished']} finished / {summary['episodes']}"
                     + (f" ({summary['skipped']} skipped)" if summary["skipped"] else "")),
        ("return", f"mean {_num(r['mean'])}  std {_num(r['std'])}  min {_num(r['min'])}  max {_num(r['max'])}"),
        ("success rate", "-" if summary["success_rate"] is None else f"{summary['success_rate']:.1%}"),
        ("pass@k", "  ".join(f"{k} {v:.3f}" for k, v in summary["pass_at_k"].items())
                   + f"  ({summary['seeds']} seeds x {summary['samples_per_seed']})"),
        ("steps", f"{summary['steps']['total']} (mean {_num(summary['steps']['mean'], 1)} per episode)"),
        ("invalid replies", str(summary["invalid_replies"])),
        ("tokens", f"prompt {summary['tokens']['prompt']}  completion {summary['tokens']['completion']}"),
        ("model latency", f"mean {_num(lat['mean'], 1)} ms  p50 {_num(lat['p50'], 1)} ms  p95 {_num(lat['p95'], 1)} ms"),
        ("end reasons", ", ".join(f"{k} {v}" for k, v in summary["end_reasons"].items()) or "-"),
    ]  # fmt: skip
    if summary.get("env_steps_per_s") is not None:
        rows.append(("speed", f"{summary['env_steps_per_s']:.0f} env steps/s over {summary['wall_s']:.1f} s"))
    if summary.get("note"):
        rows.append(("note", summary["note"]))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)
