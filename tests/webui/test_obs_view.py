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


# -- declared by schema (docs/authoring.md "How values are shown") ----------------------------

def _obs_schema() -> dict:
    """A pydantic-shaped observation schema: hints on optionals, a nested model behind $ref."""
    return {
        "type": "object",
        "$defs": {"Frame": {"type": "object", "properties": {
            "pixels": {"type": "string", "contentEncoding": "base64", "contentMediaType": "image/jpeg"}}}},
        "properties": {
            "source": {"anyOf": [{"type": "string"}, {"type": "null"}], "format": "code",
                       "contentMediaType": "text/x-python"},
            "notes": {"type": "string", "format": "multiline"},
            "shot": {"type": "string", "format": "image"},
            "frame": {"$ref": "#/$defs/Frame"},
            "frames": {"type": "array", "items": {"$ref": "#/$defs/Frame"}},
            "plain": {"type": "string"},
        },
    }


def test_schema_declares_code_text_and_images() -> None:
    raw_jpeg = base64.b64encode(b"no magic here, only bytes" * 4).decode()
    obs = {"source": "def f():\n\treturn 1", "notes": "one line", "shot": "data:image/png;base64," + PNG,
           "frame": {"pixels": raw_jpeg}, "frames": [{"pixels": raw_jpeg}], "plain": PNG}
    kinds = {k: v for k, v in build_view(obs, "/observation", schema=_obs_schema()).children}
    assert kinds["source"].kind == "code" and kinds["source"].language == "text/x-python"
    assert kinds["notes"].kind == "text"  # declared multi-line, though it has one line
    assert kinds["shot"].kind == "image"
    pixels = kinds["frame"].children[0][1]
    assert pixels.kind == "image" and pixels.src == "data:image/jpeg;base64," + raw_jpeg
    assert kinds["frames"].children[0][1].children[0][1].kind == "image"
    assert kinds["plain"].kind == "image"  # no hint: a base64 PNG is still sniffed by its bytes
    assert build_view(obs, schema=None).children[3][1].children[0][1].kind != "image"  # never by name


def test_declared_code_is_never_an_image_and_bad_base64_is_text() -> None:
    schema = {"type": "object", "properties": {
        "src": {"type": "string", "format": "code"},
        "img": {"type": "string", "contentEncoding": "base64", "contentMediaType": "image/png"},
        "svg": {"type": "string", "contentEncoding": "base64", "contentMediaType": "image/svg+xml"}}}
    kinds = {k: v.kind for k, v in build_view({"src": PNG, "img": "<script>", "svg": PNG[:40] + "x"},
                                              schema=schema).children}
    assert kinds == {"src": "code", "img": "string", "svg": "string"}


def test_long_text_is_folded_until_shown_whole() -> None:
    log = "\n".join(f"line {i}" for i in range(40))
    v = build_view({"log": log, "short": "a\nb"}).children
    assert v[0][1].folded and v[0][1].lines == 40 and not v[1][1].folded
    assert not build_view(log, full=True).folded


def test_schema_at_follows_pointers_through_refs() -> None:
    from webui.env_views import payload_schema
    from webui.obs_view import schema_at

    payload = payload_schema(_obs_schema())
    assert schema_at(payload, "/observation/frame/pixels")["contentMediaType"] == "image/jpeg"
    assert schema_at(payload, "/observation/frames/0/pixels")["contentEncoding"] == "base64"
    assert schema_at(payload, "/observation/nothing") is None and schema_at(None, "/x") is None
    sub = schema_at(payload, "/observation/frames")
    assert build_view([{"pixels": PNG}], "/observation/frames", schema=sub).children[0][1].children[0][1].kind == "image"


def test_floats_are_shown_short_with_the_exact_value_kept() -> None:
    view = dict(build_view({"x": 0.1 + 0.2, "n": 12345678901234567890, "h": 0.5}).children)
    assert (view["x"].text, view["x"].src) == ("0.3", "0.30000000000000004")
    assert (view["n"].text, view["n"].src) == ("12345678901234567890", "")  # integers in full
    assert (view["h"].text, view["h"].src) == ("0.5", "")
