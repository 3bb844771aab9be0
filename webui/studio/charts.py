"""Inline SVG charts (no chart library): an episode's per-step reward and running return."""

from __future__ import annotations

import math
from collections.abc import Sequence

from markupsafe import Markup, escape

from webui.templating import format_number

__all__ = ["reward_chart"]

MAX_POINTS = 400


def _buckets(n: int, limit: int) -> list[tuple[int, int]]:
    """``[start, end)`` index ranges splitting ``n`` items into at most ``limit`` buckets."""
    if n <= limit:
        return [(i, i + 1) for i in range(n)]
    size = n / limit
    return [(int(b * size), max(int(b * size) + 1, int((b + 1) * size))) for b in range(limit)]


def reward_chart(
    rewards: Sequence[float | None], *, width: int = 640, height: int = 170, current: int | None = None,
    step_url: str | None = None,
) -> Markup:
    """Step rewards (bars, min/max per bucket when downsampled) and the running return (line),
    with a legend, a marker per step when there are few, and (``step_url``, e.g. ``?step=``)
    a link per step or bucket to that step.

    ``rewards[i]`` is step ``i``'s reward (index 0 is the reset). ``current`` marks a step.
    """
    n = len(rewards)
    values = [0.0 if r is None or not math.isfinite(r) else float(r) for r in rewards]
    if n == 0 or all(r is None for r in rewards):
        return Markup('<p class="muted chart-empty">No rewards recorded.</p>')
    running, total = [], 0.0
    for v in values:
        total += v
        running.append(total)
    lo = min(0.0, *values, *running)
    hi = max(0.0, *values, *running)
    if hi == lo:
        hi = lo + 1.0
    pad_l, pad_r, pad_t, pad_b = 44, 8, 8, 18
    w, h = width - pad_l - pad_r, height - pad_t - pad_b

    def x(i: float) -> float:
        return pad_l + w * (i + 0.5) / n  # the centre of step i's slot

    def y(v: float) -> float:
        return pad_t + h * (hi - v) / (hi - lo)

    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="reward per step and running return over {n} steps" data-points="{n}">',
        f'<line class="axis" x1="{pad_l}" y1="{y(0):.1f}" x2="{width - pad_r}" y2="{y(0):.1f}"/>',
        f'<text class="tick" x="{pad_l - 4}" y="{y(hi) + 4:.1f}" text-anchor="end">{format_number(hi)}</text>',
        f'<text class="tick" x="{pad_l - 4}" y="{y(lo):.1f}" text-anchor="end">{format_number(lo)}</text>',
        f'<text class="tick" x="{pad_l}" y="{height - 4}">0</text>',
        f'<text class="tick" x="{width - pad_r}" y="{height - 4}" text-anchor="end">{n - 1}</text>',
    ]
    buckets = _buckets(n, MAX_POINTS)
    bar_w = max(1.0, w / len(buckets) * 0.7)
    for start, end in buckets:
        chunk = values[start:end]
        top, bottom = max(max(chunk), 0.0), min(min(chunk), 0.0)
        if top == bottom:
            continue
        parts.append(f'<rect class="bar" x="{x(start) - bar_w / 2:.1f}" y="{y(top):.1f}" '
                     f'width="{bar_w:.1f}" height="{max(0.5, y(bottom) - y(top)):.1f}"/>')
    points = " ".join(f"{x(end - 1):.1f},{y(running[end - 1]):.1f}" for _, end in buckets)
    parts.append(f'<polyline class="return" points="{points}"/>')
    if len(buckets) <= 60:
        parts += [f'<circle class="marker" cx="{x(end - 1):.1f}" cy="{y(running[end - 1]):.1f}" r="2.5"/>'
                  for _, end in buckets]
    if step_url is not None:
        slot = w / len(buckets)
        for start, end in buckets:
            tip = (f"step {start}" if end - start == 1 else f"steps {start}..{end - 1}") + \
                f": reward {format_number(max(values[start:end], key=abs))}, return {format_number(running[end - 1])}"
            parts.append(f'<a class="step-hit" href="{escape(step_url)}{start}" data-step="{start}"><rect '
                         f'x="{x(start) - slot / 2:.1f}" y="{pad_t}" width="{max(slot, 1.0):.1f}" height="{h}">'
                         f'<title>{escape(tip)}</title></rect></a>')
    if current is not None and 0 <= current < n:
        parts.append(f'<line class="cursor" x1="{x(current):.1f}" y1="{pad_t}" x2="{x(current):.1f}" '
                     f'y2="{pad_t + h}"/>')
    parts.insert(1, f"<title>{escape(f'return {format_number(running[-1])} after {n - 1} steps')}</title>")
    parts.append("</svg>")
    legend = ('<p class="chart-legend"><span class="key bar">reward per step'
              + (" (min..max per bucket)" if n > len(buckets) else "") + '</span><span class="key mean">running return</span>'
              + (" · click a step to open it" if step_url is not None else "") + "</p>")
    return Markup("".join(parts) + legend)
