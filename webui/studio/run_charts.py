"""Inline SVG charts of a run (no chart library, no JS): a line per step with a band, stacked
finish reasons, and a sparkline. Every step's column is a link (``step_url(x)``) to its groups."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from markupsafe import Markup, escape

from openenv.recording.run_compare import Histogram
from openenv.recording.run_queries import REASONS, StepStats
from webui.templating import format_number

__all__ = ["histogram_chart", "reasons_chart", "sparkline", "step_chart"]

W, H, PAD_L, PAD_R, PAD_T, PAD_B = 720, 180, 48, 10, 10, 22


def _finite(v: float | None) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


class _Frame:
    """x/y scales of a chart over ``n`` step slots and values ``lo..hi``."""

    def __init__(self, n: int, lo: float, hi: float, height: int = H) -> None:
        self.n, self.lo, self.hi = n, lo, hi if hi > lo else lo + 1.0
        self.h = height - PAD_T - PAD_B
        self.w = W - PAD_L - PAD_R
        self.height = height

    def x(self, i: float) -> float:
        return PAD_L + self.w * (i + 0.5) / self.n

    def y(self, v: float) -> float:
        return PAD_T + self.h * (self.hi - v) / (self.hi - self.lo)

    def open(self, label: str, kind: str) -> list[str]:
        return [f'<svg class="chart run-chart" data-chart="{kind}" viewBox="0 0 {W} {self.height}" width="100%" '
                f'role="img" aria-label="{escape(label)}">',
                f'<text class="tick" x="{PAD_L - 4}" y="{self.y(self.hi) + 4:.1f}" text-anchor="end">'
                f'{escape(format_number(self.hi))}</text>',
                f'<text class="tick" x="{PAD_L - 4}" y="{self.y(self.lo):.1f}" text-anchor="end">'
                f'{escape(format_number(self.lo))}</text>']

    def axis(self, steps: Sequence[StepStats], xlabel: str) -> list[str]:
        first, last = steps[0].x, steps[-1].x
        return [f'<line class="axis" x1="{PAD_L}" y1="{PAD_T + self.h}" x2="{W - PAD_R}" y2="{PAD_T + self.h}"/>',
                f'<text class="tick" x="{PAD_L}" y="{self.height - 4}">{first}</text>',
                f'<text class="tick" x="{(PAD_L + W - PAD_R) / 2:.0f}" y="{self.height - 4}" text-anchor="middle">'
                f'{escape(xlabel)}</text>',
                f'<text class="tick" x="{W - PAD_R}" y="{self.height - 4}" text-anchor="end">{last}</text>']

    def hits(self, steps: Sequence[StepStats], step_url: Callable[[int], str], tip: Callable[[StepStats], str]) -> list[str]:
        """A transparent column per step: hover names it, a click opens its groups."""
        slot = self.w / self.n
        return [f'<a class="step-hit" href="{escape(step_url(s.x))}" data-step="{s.x}"><rect x="{self.x(i) - slot / 2:.1f}" '
                f'y="{PAD_T}" width="{max(slot, 1.0):.1f}" height="{self.h}"><title>{escape(tip(s))}</title></rect></a>'
                for i, s in enumerate(steps)]  # fmt: skip


def _tip(s: StepStats, xlabel: str) -> str:
    parts = [f"{xlabel} {s.x}: {s.n} episodes", f"reward mean {format_number(s.mean)}",
             f"std {format_number(s.std)}", f"min {format_number(s.min)}", f"max {format_number(s.max)}"]
    if s.success is not None:
        parts.append(f"success {s.success:.0%}")
    if s.length is not None:
        parts.append(f"length {format_number(s.length)}")
    if s.groups:
        parts.append(f"{s.zero_spread}/{s.groups} groups tie")
    if s.tokens is not None:
        parts.append(f"tokens {format_number(s.prompt_tokens)} prompt + {format_number(s.completion_tokens)} completion "
                     f"per episode, {format_number(s.tokens)} in all")
    return " · ".join(parts)


def step_chart(steps: Sequence[StepStats], step_url: Callable[[int], str], *, metric: str = "reward",
               xlabel: str = "training step") -> Markup:
    """``reward``: mean (line), ±std (band), min..max (light band); ``tokens``: mean completion and
    prompt tokens (two lines); ``success``/``length``/``zero_spread``: one line. Legend, axis, a marker per point when there are few."""
    if not steps:
        return Markup('<p class="muted chart-empty">No episodes yet.</p>')
    series: list[float | None]
    if metric == "reward":
        series = [_finite(s.mean) for s in steps]
        lows = [_finite(s.min) for s in steps]
        highs = [_finite(s.max) for s in steps]
        spread = [(m - s.std, m + s.std) for m, s in zip(series, steps, strict=True) if m is not None and s.std is not None]
        vals = [v for v in (*series, *lows, *highs, *(x for pair in spread for x in pair)) if v is not None]
    elif metric == "success":
        series = [None if s.success is None else s.success * 100 for s in steps]
        vals = [0.0, 100.0]
    elif metric == "length":
        series = [_finite(s.length) for s in steps]
        vals = [0.0, *[v for v in series if v is not None]]
    elif metric == "tokens":
        series = [_finite(s.completion_tokens) for s in steps]
        second = [_finite(s.prompt_tokens) for s in steps]
        vals = [0.0, *[v for v in (*series, *second) if v is not None]]
    else:
        series = [100.0 * s.zero_spread / s.groups if s.groups else None for s in steps]
        vals = [0.0, 100.0]
    if not vals:
        return Markup('<p class="muted chart-empty">No rewards recorded.</p>')
    f = _Frame(len(steps), min(vals), max(vals))
    labels = {"reward": "reward mean, ±std and min..max", "success": "success rate (%)", "length": "mean length (steps)",
              "zero_spread": "groups whose rewards all tie (%)",
              "tokens": "mean prompt and completion tokens per episode"}
    parts = f.open(f"{labels[metric]} per {xlabel}", metric)
    if metric == "reward":
        parts.append(_band(f, lows, highs, "band-minmax"))
        std_lo = [None if m is None or s.std is None else m - s.std for m, s in zip(series, steps, strict=True)]
        std_hi = [None if m is None or s.std is None else m + s.std for m, s in zip(series, steps, strict=True)]
        parts.append(_band(f, std_lo, std_hi, "band-std"))
    parts += f.axis(steps, xlabel)
    if metric == "tokens":
        parts.append(_line(f, second, "prompt-tokens"))
    points = [(f.x(i), f.y(v)) for i, v in enumerate(series) if v is not None]
    if points:
        parts.append(f'<polyline class="series {metric}" points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in points)}"/>')
        if len(points) <= 60:
            parts += [f'<circle class="marker" cx="{x:.1f}" cy="{y:.1f}" r="2.5"/>' for x, y in points]
    parts += f.hits(steps, step_url, lambda s: _tip(s, xlabel))
    parts.append("</svg>")
    legend = {"reward": '<span class="key mean">mean</span><span class="key std">±std</span>'
                        '<span class="key minmax">min..max</span>',
              "tokens": '<span class="key mean">completion</span><span class="key prompt-tokens">prompt</span>'}.get(
        metric, f'<span class="key mean">{labels[metric]}</span>')
    return Markup("".join(parts) + f'<p class="chart-legend">{legend} · click a {escape(xlabel)} to open its groups</p>')


def _line(f: _Frame, values: Sequence[float | None], cls: str) -> str:
    pts = [f"{f.x(i):.1f},{f.y(v):.1f}" for i, v in enumerate(values) if v is not None]
    return f'<polyline class="series {cls}" points="{" ".join(pts)}"/>' if pts else ""


def _band(f: _Frame, lows: Sequence[float | None], highs: Sequence[float | None], cls: str) -> str:
    pts = [(i, lo, hi) for i, (lo, hi) in enumerate(zip(lows, highs, strict=True)) if lo is not None and hi is not None]
    if not pts:
        return ""
    top = [f"{f.x(i):.1f},{f.y(hi):.1f}" for i, _, hi in pts]
    bottom = [f"{f.x(i):.1f},{f.y(lo):.1f}" for i, lo, _ in reversed(pts)]
    return f'<polygon class="{cls}" points="{" ".join(top + bottom)}"/>'


def reasons_chart(steps: Sequence[StepStats], step_url: Callable[[int], str], *, xlabel: str = "training step") -> Markup:
    """Why episodes ended, stacked per step as shares of its episodes (env vs model errors apart)."""
    if not steps:
        return Markup("")
    f = _Frame(len(steps), 0.0, 100.0, height=150)
    parts = f.open(f"finish reasons per {xlabel}", "reasons")
    slot = f.w / f.n * 0.8
    for i, s in enumerate(steps):
        base = 0.0
        for name in (*REASONS, "other"):
            k = s.reasons.get(name, 0)
            if not k or not s.n:
                continue
            share = 100.0 * k / s.n
            parts.append(f'<rect class="reason r-{name}" x="{f.x(i) - slot / 2:.1f}" y="{f.y(base + share):.1f}" '
                         f'width="{max(slot, 0.8):.1f}" height="{f.y(base) - f.y(base + share):.1f}"/>')
            base += share
    parts += f.axis(steps, xlabel)
    parts += f.hits(steps, step_url, lambda s: f"{xlabel} {s.x}: " + ", ".join(f"{k} {v}" for k, v in s.reasons.items()))
    parts.append("</svg>")
    seen = [n for n in (*REASONS, "other") if any(s.reasons.get(n) for s in steps)]
    legend = "".join(f'<span class="key rk-{n}">{n}</span>' for n in seen)
    return Markup("".join(parts) + f'<p class="chart-legend">{legend}</p>')


def sparkline(values: Sequence[float | None], *, width: int = 140, height: int = 28) -> Markup:
    """A small trend line (the runs list)."""
    pts = [(i, v) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    if len(pts) < 2:
        return Markup('<span class="muted">—</span>')
    lo, hi = min(v for _, v in pts), max(v for _, v in pts)
    hi = hi if hi > lo else lo + 1.0
    n = len(values)
    coords = " ".join(f"{2 + (width - 4) * i / (n - 1):.1f},{2 + (height - 4) * (hi - v) / (hi - lo):.1f}" for i, v in pts)
    title = f"{format_number(pts[0][1])} → {format_number(pts[-1][1])}"
    return Markup(f'<svg class="sparkline" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
                  f'aria-label="trend {escape(title)}"><polyline points="{coords}"/><title>{escape(title)}</title></svg>')


def histogram_chart(hist: Histogram | None) -> Markup:
    """Two runs' reward distributions over the same bins (A and B bars side by side)."""
    if hist is None:
        return Markup('<p class="muted chart-empty">No rewards recorded.</p>')
    peak = max(1, *hist.a, *hist.b)
    f = _Frame(len(hist.a), 0.0, float(peak), height=160)
    parts = f.open("reward distribution of runs A and B", "histogram")
    slot = f.w / f.n
    for i, (na, nb) in enumerate(zip(hist.a, hist.b, strict=True)):
        for k, (n, cls) in enumerate(((na, "hist-a"), (nb, "hist-b"))):
            if n:
                x0 = PAD_L + slot * i + slot * (0.1 + 0.4 * k)
                parts.append(f'<rect class="{cls}" x="{x0:.1f}" y="{f.y(n):.1f}" width="{slot * 0.4:.1f}" '
                             f'height="{f.y(0) - f.y(n):.1f}"><title>{"AB"[k]}: {n} episodes with reward '
                             f'{escape(format_number(hist.edges[i]))}..{escape(format_number(hist.edges[i + 1]))}</title></rect>')
    parts += [f'<line class="axis" x1="{PAD_L}" y1="{f.y(0):.1f}" x2="{W - PAD_R}" y2="{f.y(0):.1f}"/>',
              f'<text class="tick" x="{PAD_L}" y="{f.height - 4}">{escape(format_number(hist.lo))}</text>',
              f'<text class="tick" x="{W - PAD_R}" y="{f.height - 4}" text-anchor="end">{escape(format_number(hist.hi))}</text>',
              "</svg>"]
    return Markup("".join(parts) + '<p class="chart-legend"><span class="key ka">A</span><span class="key kb">B</span>'
                  " · episodes per reward bin</p>")
