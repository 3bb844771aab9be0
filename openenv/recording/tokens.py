"""Token arrays of a model turn, stored packed in ``step_agent.tokens`` instead of JSON text.

A turn's ``data["capture"]`` holds ``prompt_ids``/``sampled_ids`` (token ids), ``logprobs`` and
``loss_mask``; as JSON an 8k + 8k-token call takes ~200 KB. ``pack`` takes those lists out of the
data and returns them as typed little-endian arrays (ids int32, or int64 when one does not fit;
logprobs float32 when every value survives it exactly, else float64; the mask uint8); ``unpack``
puts them back, so readers see the same ``data`` as was recorded.

Blob: ``b"OETK"``, version (u8), array count (u8), then per array its name length (u8), name
(ASCII), type code (one byte: ``i q f d B``), element count (u32) and the elements.
"""

from __future__ import annotations

import struct
import sys
from array import array
from typing import Any

__all__ = ["ARRAYS", "pack", "turn_counts", "unpack"]

MAGIC = b"OETK"
VERSION = 1
ARRAYS = {"prompt_ids": "ids", "sampled_ids": "ids", "logprobs": "floats", "loss_mask": "mask"}
_HEAD = struct.Struct("<4sBB")
_COUNT = struct.Struct("<I")
_BIG = sys.byteorder == "big"
_INT32 = (-(2**31), 2**31 - 1)
_TYPES = {"i": 4, "q": 8, "f": 4, "d": 8, "B": 1}
assert array("i").itemsize == 4 and array("q").itemsize == 8  # noqa: S101 - the platforms we run on


def _typed(kind: str, values: list[Any]) -> array | None:
    """``values`` as the smallest exact typed array of their kind, or ``None`` if they are not one."""
    try:
        if kind == "floats":
            if not all(v.__class__ in (float, int) for v in values):
                return None
            narrow = array("f", values)
            return narrow if narrow.tolist() == values else array("d", values)
        if not all(v.__class__ is int for v in values):
            return None
        if kind == "mask":
            return array("B", values)
        lo, hi = (min(values), max(values)) if values else (0, 0)
        return array("i", values) if _INT32[0] <= lo and hi <= _INT32[1] else array("q", values)
    except (OverflowError, TypeError, ValueError):
        return None


def pack(data: dict[str, Any] | None) -> tuple[dict[str, Any] | None, bytes | None]:
    """``(data without its token lists, their packed blob)``; ``(data, None)`` when there are none
    (``data`` itself is never modified)."""
    capture = data.get("capture") if isinstance(data, dict) else None
    if not isinstance(capture, dict):
        return data, None
    parts: list[bytes] = []
    names: list[str] = []
    for name, kind in ARRAYS.items():
        values = capture.get(name)
        if not isinstance(values, list) or not values:
            continue
        typed = _typed(kind, values)
        if typed is None:
            continue
        if _BIG:
            typed.byteswap()
        raw = name.encode()
        parts.append(bytes((len(raw),)) + raw + typed.typecode.encode() + _COUNT.pack(len(typed)) + typed.tobytes())
        names.append(name)
    if not names:
        return data, None
    rest = {k: v for k, v in capture.items() if k not in names}
    return {**data, "capture": rest}, _HEAD.pack(MAGIC, VERSION, len(names)) + b"".join(parts)


def _count(data: dict[str, Any], ids: str, usage: str) -> int | None:
    capture = data.get("capture")
    values = capture.get(ids) if isinstance(capture, dict) else None
    if isinstance(values, list) and values:
        return len(values)
    n = data.get(usage)
    return n if n.__class__ is int and n >= 0 else None


def turn_counts(data: dict[str, Any] | None) -> tuple[int | None, int | None]:
    """``(prompt, completion)`` tokens of a model turn (before ``pack``): the length of its
    ``capture.prompt_ids``/``sampled_ids``, else the ``prompt_tokens``/``completion_tokens`` it
    reports (an API's usage), summed with its failed ``attempts``; ``None`` where nothing says."""
    if not isinstance(data, dict):
        return None, None
    attempts = data.get("attempts")
    parts = [data, *(a for a in attempts if isinstance(a, dict))] if isinstance(attempts, list) else [data]
    out: list[int | None] = []
    for ids, usage in (("prompt_ids", "prompt_tokens"), ("sampled_ids", "completion_tokens")):
        counts = [n for n in (_count(d, ids, usage) for d in parts) if n is not None]
        out.append(sum(counts) if counts else None)
    return out[0], out[1]


def unpack(data: dict[str, Any] | None, blob: bytes | None) -> dict[str, Any] | None:
    """``data`` with the arrays of ``blob`` back in ``data["capture"]`` (``ValueError`` if damaged)."""
    if not blob:
        return data
    blob = bytes(blob)
    try:
        magic, version, count = _HEAD.unpack_from(blob)
        if magic != MAGIC or version != VERSION:
            raise ValueError("not a token blob of this version")
        at = _HEAD.size
        arrays: dict[str, list[Any]] = {}
        for _ in range(count):
            n = blob[at]
            name = blob[at + 1 : at + 1 + n].decode("ascii")
            code = chr(blob[at + 1 + n])
            (length,) = _COUNT.unpack_from(blob, at + 2 + n)
            start = at + 2 + n + _COUNT.size
            end = start + length * _TYPES[code]
            if end > len(blob):
                raise ValueError("token blob cut short")
            typed = array(code)
            typed.frombytes(blob[start:end])
            if _BIG:
                typed.byteswap()
            arrays[name] = typed.tolist()
            at = end
    except (struct.error, IndexError, KeyError, UnicodeDecodeError) as exc:
        raise ValueError(f"damaged token blob ({exc})") from None
    out = dict(data or {})
    out["capture"] = {**(out.get("capture") or {}), **arrays}
    return out
