"""Benchmark: what a gap costs a few lines of Python on this machine, whether the process sleeps or spins.

    .venv/bin/python bench/cold_cache.py [--reps 30]

Times three small pieces of the work every REPL cell and tool call does (``compile("x = 1")``,
``json.dumps`` of a small dict, a no-op call) right after the same piece ran (warm) and after a
gap of 0.2 to 150 ms, the gap spent either asleep (``time.sleep``) or spinning in a tight loop
that touches almost nothing. Prints medians (microseconds) and the ratio to warm; asserts nothing.

If only sleeping slowed the next call, the cause would be our own idle: the CPU's idle state or
the scheduler. If spinning slows it as much, the process's code and data leave the CPU's caches
with elapsed time whatever the process does (presumably the host's other work), so
every process a request crosses pays cold caches on its first few hundred microseconds of
Python, in proportion to the code it touches. That is why "after a pause" figures here (REPL
cells, ``bench/repl_cells.py``) sit well above back-to-back ones for the floors too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

GAPS_MS = (0.2, 1.0, 5.0, 20.0, 50.0, 150.0)


def _compile() -> None:
    compile("x = 1", "<cell>", "exec")


def _dumps() -> None:
    json.dumps({"stdout": "", "locals": {"x": "1"}, "done": False})


def _noop() -> None:
    return None


PIECES: dict[str, Callable[[], None]] = {"compile('x = 1')": _compile, "json.dumps(small)": _dumps, "no-op call": _noop}


def spin(seconds: float) -> None:
    """Busy-wait ``seconds`` without touching other code or data."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def after(piece: Callable[[], None], gap_s: float, how: str, reps: int) -> float:
    """Median microseconds of ``piece`` run right after a gap of ``gap_s`` spent ``how``."""
    times = []
    for _ in range(reps):
        if gap_s:
            (time.sleep if how == "sleep" else spin)(gap_s)
        else:
            piece()
        began = time.perf_counter_ns()
        piece()
        times.append(time.perf_counter_ns() - began)
    return statistics.median(times) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"median us of each piece after a gap (x: ratio to warm), {args.reps} reps; load avg {load}")
    header = "".join(f"{f'{g:g} ms':>17}" for g in GAPS_MS)
    for piece_name, piece in PIECES.items():
        warm = after(piece, 0, "", args.reps)
        print(f"\n{piece_name}: warm {warm:.1f} us\n{'gap spent':12}{header}")
        for how in ("sleep", "spin"):
            cells = "".join(f"{(t := after(piece, g / 1000, how, args.reps)):9.1f} ({t / warm:4.1f}x)" for g in GAPS_MS)
            print(f"{how:12}{cells}")


if __name__ == "__main__":
    main()
