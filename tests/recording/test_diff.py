"""Structured diff of observations and states."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from openenv.recording import diff


def test_added_removed_changed_paths() -> None:
    d = diff(
        {"a": 1, "b": {"c": [1, 2, 3]}, "gone": 0, "odd key": 1},
        {"a": 2, "b": {"c": [1, 5]}, "new": True, "odd key": 1},
    )
    assert [c.path for c in d.changed] == ["a", "b.c[1]"]
    assert [c.path for c in d.removed] == ["b.c[2]", "gone"]
    assert [(c.path, c.after) for c in d.added] == [("new", True)]
    assert d and d.summary().startswith("changed: a, b.c[1]")
    assert d.to_dict()["changed"][0] == {"path": "a", "before": 1, "after": 2}


def test_equal_values_and_types() -> None:
    assert not diff({"x": [1, {"y": None}]}, {"x": [1, {"y": None}]})
    assert diff({"x": 1}, {"x": 1.0}).summary() == "equal"
    assert [c.path for c in diff({"x": 1}, {"x": True}).changed] == ["x"]
    assert [c.path for c in diff({"x": "1"}, {"x": 1}).changed] == ["x"]
    assert diff(1, 2).changed[0].path == ""
    assert [c.path for c in diff({"a b": 1}, {"a b": 2}).changed] == ["['a b']"]


def test_long_text_gets_a_unified_diff() -> None:
    before = "line one\nline two\nline three\n"
    d = diff({"out": before}, {"out": before.replace("two", "2")})
    text = d.changed[0].text_diff
    assert text is not None and "-line two" in text and "+line 2" in text
    assert diff({"s": "a"}, {"s": "b"}).changed[0].text_diff is None


def test_models_and_dataclasses_compare_as_dicts() -> None:
    class Obs(BaseModel):
        echoed: str
        n: int = 0

    @dataclass
    class DObs:
        echoed: str
        n: int = 0

    assert not diff(Obs(echoed="x"), {"echoed": "x", "n": 0})
    assert [c.path for c in diff(DObs(echoed="x"), Obs(echoed="y")).changed] == ["echoed"]
