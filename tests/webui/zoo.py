"""A zoo of action models with every kind of field the form generator handles."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from openenv.core.env_server.types import Action


class Color(str, enum.Enum):
    red = "red"
    green = "green"
    blue = "blue"


class Level(enum.IntEnum):
    low = 1
    high = 2


class Circle(BaseModel):
    kind: Literal["circle"] = "circle"
    radius: float = Field(1.0, gt=0, description="Radius in metres")


class Rect(BaseModel):
    kind: Literal["rect"] = "rect"
    w: int = Field(ge=1)
    h: int = 2
    label: str | None = None


class Group(BaseModel):
    kind: Literal["group"] = "group"
    members: list[Annotated[Circle | Rect, Field(discriminator="kind")]] = Field(default_factory=list)


Shape = Annotated[Circle | Rect | Group, Field(discriminator="kind")]


class Item(BaseModel):
    name: str
    qty: int = Field(1, ge=1, le=10)
    tags: list[str] = Field(default_factory=list)


class Inner(BaseModel):
    depth: int = 0
    note: str = ""


class Outer(BaseModel):
    inner: Inner = Field(default_factory=Inner)
    flag: bool = True


class Tree(BaseModel):
    value: int = 0
    children: list[Tree] = Field(default_factory=list)


class ZooAction(Action):
    """Every field kind: scalars, enums, optionals, nested models, lists, unions, fallbacks."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    text: str = Field(description="A single line of text")
    body: str = Field("", json_schema_extra={"format": "textarea"}, description="Several lines")
    source: str = Field("print(1)", json_schema_extra={"format": "code", "language": "python"})
    email: str = Field("a@example.com", json_schema_extra={"format": "email"})
    count: int = Field(3, ge=0, le=9)
    ratio: float = Field(0.5, ge=0, le=1, multiple_of=0.25)
    enabled: bool = False
    color: Color = Color.green
    level: Level = Level.low
    mode: Literal["fast", "slow"] = "fast"
    mixed: Literal["a", 1, True] = "a"
    maybe_int: int | None = None
    maybe_text: str | None = "x"
    maybe_shape: Circle | None = None
    outer: Outer = Field(default_factory=Outer)
    shape: Shape = Field(default_factory=Circle, description="A tagged union")
    any_shape: Circle | Rect | None = None
    number_or_text: int | str = 1
    words: list[str] = Field(["a"], min_length=1, max_length=4)
    numbers: list[int] = Field(default_factory=list)
    items: list[Item] = Field(default_factory=list, max_length=5)
    shapes: list[Shape] = Field(default_factory=list)
    grid: list[list[int]] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)
    anything: Any = None
    pair: tuple[int, str] = (1, "a")
    tree: Tree = Field(default_factory=Tree)
    weird: str = Field("w", alias="weird.key name")

    @field_validator("text")
    @classmethod
    def _no_forbidden(cls, value: str) -> str:
        if value == "forbidden":
            raise ValueError("the word 'forbidden' is not allowed")
        return value


SAMPLES: list[dict[str, Any]] = [
    {"text": "hello"},
    {
        "text": "héllo <b>&amp;</b>",
        "body": "line 1\nline 2\n",
        "source": "def f():\n    return 1\n",
        "email": "x@y.z",
        "count": 9,
        "ratio": 0.75,
        "enabled": True,
        "color": "blue",
        "level": 2,
        "mode": "slow",
        "mixed": 1,
        "maybe_int": 7,
        "maybe_text": None,
        "maybe_shape": {"kind": "circle", "radius": 2.5},
        "outer": {"inner": {"depth": 4, "note": "deep"}, "flag": False},
        "shape": {"kind": "group", "members": [{"kind": "rect", "w": 3, "h": 4, "label": "r"}, {"kind": "circle", "radius": 1.0}]},
        "any_shape": {"kind": "rect", "w": 5, "h": 6, "label": None},
        "number_or_text": "seven",
        "words": ["a", "b", "c"],
        "numbers": [1, -2, 3],
        "items": [{"name": "apple", "qty": 2, "tags": ["red", "round"]}, {"name": "pear", "qty": 1, "tags": []}],
        "shapes": [{"kind": "rect", "w": 1, "h": 1, "label": "sq"}, {"kind": "group", "members": []}],
        "grid": [[1, 2], [3], []],
        "extra": {"k": [1, {"x": None}]},
        "anything": [1, "two", None],
        "pair": [2, "b"],
        "tree": {"value": 1, "children": [{"value": 2, "children": []}]},
        "weird.key name": "odd",
        "metadata": {"trace": "t1"},
    },
    {"text": "", "mixed": True, "number_or_text": 0, "shape": {"kind": "rect", "w": 1}, "maybe_int": 0},
]
