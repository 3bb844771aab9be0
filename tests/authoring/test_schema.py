"""The JSON-schema subset used by the wire checks: samples conform, and violations are named."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from openenv.core.env_server.serialization import json_schema
from openenv.core.testing_schema import sample_value, schema_errors
from openenv.envs.echo import EchoAction, EchoObservation
from openenv.envs.repl.models import REPLAction, REPLObservation, REPLState


class Inner(BaseModel):
    x: int = Field(gt=3)


class Mixed(BaseModel):
    name: str = Field(min_length=3)
    mode: Literal["a", "b"]
    ratio: float = Field(ge=0.5, le=2)
    tags: list[str] = Field(min_length=1)
    inner: Inner
    maybe: Inner | None = None
    flag: bool


@pytest.mark.parametrize("cls", [Mixed, EchoAction, EchoObservation, REPLAction, REPLObservation, REPLState])
def test_a_sample_conforms_and_validates(cls):
    schema = json_schema(cls)
    value = sample_value(schema)
    assert schema_errors(value, schema) == []
    cls.model_validate(value)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ({"name": "ab"}, "shorter than 3"),
        ({"mode": "c"}, "is not one of"),
        ({"ratio": 3}, "above 2"),
        ({"tags": []}, "fewer than 1 items"),
        ({"inner": {"x": 3}}, "$.inner.x: 3 not above 3"),
        ({"maybe": {"x": "no"}}, "$.maybe: matches none of the anyOf options"),
        ({"flag": 1}, "$.flag: expected boolean, got int"),
        ({"extra": 1}, None),
    ],
)
def test_violations_are_named(value, words):
    schema = json_schema(Mixed)
    good = sample_value(schema)
    errors = schema_errors({**good, **value}, schema)
    if words is None:
        assert errors == []  # Mixed allows extra fields
    else:
        assert any(words in e for e in errors), errors


def test_forbidden_extras_and_missing_fields():
    schema = json_schema(EchoAction)
    assert schema_errors({"message": "hi", "nope": 1}, schema) == ["$: unexpected field 'nope'"]
    assert schema_errors({}, schema) == ["$: missing required field 'message'"]
    assert schema_errors({"message": 1.5}, schema) == ["$.message: expected string, got float"]
