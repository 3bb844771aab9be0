"""``SerialDeadline``: one timer for a session's calls, each still held to its own deadline."""

from __future__ import annotations

import asyncio
import time

import pytest

from openenv.core._deadline import SerialDeadline


async def _quick() -> int:
    await asyncio.sleep(0)
    return 1


def test_a_slow_call_times_out_at_its_deadline_after_many_quick_ones() -> None:
    async def go() -> float:
        deadline = SerialDeadline()
        for _ in range(1000):  # the timer armed by the first is left for later calls
            assert await deadline.run(_quick(), 0.3) == 1
        await asyncio.sleep(0.2)  # the armed timer fires while idle, or during the next call
        began = time.monotonic()
        with pytest.raises(TimeoutError):
            await deadline.run(asyncio.sleep(10), 0.3)
        return time.monotonic() - began

    took = asyncio.run(go())
    assert 0.25 <= took < 2.0, took  # its own 0.3 s, not the first call's (long past) due time


def test_a_shorter_timeout_than_the_armed_timer_is_honoured() -> None:
    async def go() -> float:
        deadline = SerialDeadline()
        assert await deadline.run(_quick(), 60.0) == 1  # arms a timer a minute away
        began = time.monotonic()
        with pytest.raises(TimeoutError):
            await deadline.run(asyncio.sleep(10), 0.2)
        return time.monotonic() - began

    assert asyncio.run(go()) < 2.0


def test_outside_cancellation_stays_cancellation_and_calls_go_on() -> None:
    async def go() -> None:
        deadline = SerialDeadline()
        task = asyncio.ensure_future(deadline.run(asyncio.sleep(10), 5.0))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await deadline.run(_quick(), 5.0) == 1
        with pytest.raises(TimeoutError):
            await deadline.run(asyncio.sleep(10), 0.1)
        assert await deadline.run(_quick(), None) == 1
        deadline.cancel()

    asyncio.run(go())


def test_used_from_one_loop_then_another() -> None:
    """A client may be driven from a new loop (``asyncio.run`` twice): the old loop's timer is left behind."""
    deadline = SerialDeadline()

    async def first() -> None:
        assert await deadline.run(_quick(), 30.0) == 1  # arms a timer on this loop, which then closes

    async def second() -> float:
        assert await deadline.run(_quick(), 30.0) == 1
        began = time.monotonic()
        with pytest.raises(TimeoutError):
            await deadline.run(asyncio.sleep(10), 0.2)
        return time.monotonic() - began

    asyncio.run(first())
    assert asyncio.run(second()) < 2.0
