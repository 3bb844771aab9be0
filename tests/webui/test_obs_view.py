"""Observation display trees: text, images, trees, and the "show all" limits."""

from __future__ import annotations

import base64

from webui.obs_view import MAX_ITEMS, PREVIEW_CHARS, build_view, image_src, pointer, resolve_pointer

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(200)).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + bytes(200)).decode()


def test_kinds() -> None:
    view = build_view({"n": 1, "b": True, "z": None, "s": "hi", "t": "a\nb", "l": [1], "d": {"k": "v"}})
    kinds = {k: v.kind for k, v in view.children}
    assert kinds == {"n": "number", "b": "bool", "z": "null", "s": "string", "t": "text", "l": "array", "d": "object"}


def test_images_from_base64_and_data_urls() -> None:
    assert image_src(PNG).startswith("data:image/png;base64,iVBOR")
    assert image_src(JPEG).startswith("data:image/jpeg;base64,/9j/")
    url = "data:image/png;base64," + PNG
    assert image_src(url) == url
    assert image_src("iVBOR not an image") == "" and image_src("hello") == ""
    assert build_view({"img": PNG}).children[0][1].kind == "image"


def test_long_values_are_truncated_until_show_all() -> None:
    text = "x" * (PREVIEW_CHARS * 3)
    short = build_view(text)
    assert short.truncated and len(short.text) == PREVIEW_CHARS and short.size == len(text)
    assert not build_view(text, full=True).truncated
    many = build_view(list(range(MAX_ITEMS * 3)), "/l")
    assert len(many.children) == MAX_ITEMS and many.hidden == MAX_ITEMS * 2
    assert many.children[1][1].path == "/l/1"
    assert build_view(list(range(MAX_ITEMS * 3)), full=True).hidden == 0


def test_pointers_round_trip() -> None:
    data = {"a/b": {"c~d": [10, 20]}}
    ptr = pointer(["a/b", "c~d", 1])
    assert ptr == "/a~1b/c~0d/1"
    assert resolve_pointer(data, ptr) == 20
    assert resolve_pointer(data, "") is data


def test_node_budget_bounds_huge_trees() -> None:
    data = {f"k{i}": {f"j{j}": j for j in range(40)} for i in range(40)}
    view = build_view(data)
    total = sum(len(child.children) for _, child in view.children)
    assert total < 40 * 40
