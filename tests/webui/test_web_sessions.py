"""The per-tab history: bounded in entries, kept observations and bytes; gone tabs forgotten."""

from __future__ import annotations

from webui import web_sessions
from webui.web_sessions import KEEP_PAYLOADS, MAX_HISTORY, WebSessions, rough_size


def _payload(text: str = "x") -> dict:
    return {"observation": {"text": text}, "reward": 1.0, "done": False}


def test_reset_starts_a_new_episode_and_steps_number_from_it() -> None:
    ws = WebSessions().add("s")
    ws.record("reset", {}, _payload(), 1.0)
    ws.record("step", {"a": 1}, _payload(), 1.0)
    assert [r.index for r in ws.history] == [0, 1] and ws.episodes == 1
    ws.record("reset", {}, _payload(), 1.0)
    assert [r.index for r in ws.history] == [0] and ws.episodes == 2


def test_history_is_bounded_and_old_observations_are_dropped() -> None:
    ws = WebSessions().add("s")
    ws.record("reset", {}, _payload(), 1.0)
    for _ in range(MAX_HISTORY + 10):
        ws.record("step", {}, _payload(), 1.0)
    assert len(ws.history) == MAX_HISTORY and ws.dropped == 11
    kept = [r for r in ws.history if r.payload is not None]
    assert len(kept) == KEEP_PAYLOADS and kept[-1] is ws.latest
    assert ws.find(ws.latest.index - KEEP_PAYLOADS).payload is None


def test_big_observations_are_kept_within_a_byte_budget(monkeypatch) -> None:
    monkeypatch.setattr(web_sessions, "KEEP_BYTES", 3_500_000)
    ws = WebSessions().add("s")
    for _ in range(5):
        ws.record("step", {}, _payload("y" * 1_000_000), 1.0)
    assert sum(r.payload is not None for r in ws.history) == 3


def test_sizes_and_tab_bookkeeping() -> None:
    assert rough_size("abc") == 3 and rough_size({"a": "bb"}) == 66
    assert rough_size(list(range(10**6))) == 16 * 10**6 + 16 * 499  # counts at most 500 nodes
    tabs = WebSessions(cap=2)
    for sid in ("a", "b", "c"):
        tabs.add(sid)
    assert len(tabs) == 2 and tabs.get("a") is None
    tabs.get("b").pool_id, tabs.get("c").pool_id = "pb", "pc"
    tabs.release_missing({"pc"})
    assert tabs.get("b").pool_id is None and tabs.get("c").pool_id == "pc" and len(tabs) == 2
