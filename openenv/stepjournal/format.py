"""The journal file: a control page, then a ring of checksummed records.

Control page (``DATA_START`` bytes, little-endian):

* ``@0``  ``magic "OEJ2", u32 version``.
* ``@64`` progress, written by the committer only: ``u32 lap, u64 offset, u32 crc32``: every
  record before ``offset`` of lap ``lap`` is in SQLite.
* ``@128`` last commit error, written by the committer only: ``u32 seq, u32 length, u32 crc32``
  then ``length`` bytes of JSON ``{"code", "message"}``; the writer raises it once per ``seq``.

Records: ``u32 length, u32 crc32, u32 lap`` + payload; the checksum (seeded with the lap) covers
the payload. A header of zeros ends the records written so far. A record whose lap or checksum
does not match is not there (yet). Payload kinds (first byte):

* ``S`` a step as it crossed the wire: ``STEP_HEAD`` (kind, id length, flags ``HAS_REWARD`` and
  ``DONE``, index, time, latency, reward, request and reply lengths), then the episode id, the
  step request text and the server's reply text, exactly as sent and received (``pack_step``).
  The committer stores these payloads as they are in ``step_chunk.data`` (``wire_steps.py``).
* ``W`` the same without reward and done (the first ring release wrote these; still read).
* ``R`` step rows already serialised: a JSON list of rows, each the ``step`` columns in order.
* ``E`` an episode end: JSON ``{"episode_id", "end", "t"}``.
* ``I`` a row for another table (a run, an episode, its reset step, a model turn): JSON
  ``[table, {column: value}]``, a bytes value as ``{"$bytes": base64}``.
* ``N`` the ring wrapped: the next record is at ``DATA_START``, in lap + 1.
* ``J`` jump: the next record (same lap) is at the given offset (the file grew while the writer was
  a lap ahead of the committer).

The writer only writes where the committer has finished, so a journal never holds two versions of
one place that both still matter.
"""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

__all__ = [
    "DATA_START",
    "DONE",
    "HAS_REWARD",
    "STEP_HEAD",
    "STEP_SUMMARY",
    "STEP_TIME",
    "error_bytes",
    "error_seq",
    "HEADER",
    "MAGIC",
    "Progress",
    "control_page",
    "pack_end",
    "pack_insert",
    "pack_jump",
    "pack_rows",
    "pack_step",
    "pack_wire",
    "pack_wrap",
    "read_error",
    "read_progress",
    "record",
    "scan",
    "start_of",
    "progress_bytes",
    "unpack_wire",
]

MAGIC = b"OEJ2"
VERSION = 1
DATA_START = 4096
PROGRESS_AT = 64
ERROR_AT = 128
ERROR_MAX = 2048
HEADER = struct.Struct("<III")  # payload length, crc32 (seeded with the lap), lap
_PROGRESS = struct.Struct("<IQ")
_CRC = struct.Struct("<I")
_ERROR = struct.Struct("<III")
_WIRE = struct.Struct("<cBIddII")  # kind, id length, index, time, latency ms, request length, reply length
STEP_HEAD = struct.Struct("<cBBIdddII")  # kind, id length, flags, index, time, latency ms, reward, request/reply length
HAS_REWARD, DONE = 1, 2  # flags (done is the highest: ``flags >= DONE``)
STEP_SUMMARY = struct.Struct("<xBBI16xd")  # of a ``STEP_HEAD``: id length, flags, index, reward
STEP_TIME = struct.Struct("<7xd")  # of a ``STEP_HEAD``: time
_JUMP = struct.Struct("<cQ")
FIRST_LAP = 1


class Progress(NamedTuple):
    lap: int
    offset: int


def control_page() -> bytes:
    """A fresh control page: magic, and progress at the very start of lap 1."""
    page = bytearray(DATA_START)
    page[0:8] = MAGIC + struct.pack("<I", VERSION)
    page[PROGRESS_AT : PROGRESS_AT + 16] = progress_bytes(Progress(FIRST_LAP, DATA_START))
    return bytes(page)


def record(lap: int, payload: bytes) -> bytes:
    """One record (header + payload) of lap ``lap``."""
    return HEADER.pack(len(payload), zlib.crc32(payload, lap), lap) + payload


def pack_step(
    episode_id: bytes, idx: int, t: float, latency_ms: float, reward: float | None, done: bool,
    request: bytes, reply: bytes,
) -> bytes:  # fmt: skip
    """An ``S`` payload (the episode id as ASCII bytes)."""
    flags = (DONE if done else 0) | (0 if reward is None else HAS_REWARD)
    head = STEP_HEAD.pack(b"S", len(episode_id), flags, idx, t, latency_ms, 0.0 if reward is None else reward,
                          len(request), len(reply))  # fmt: skip
    return b"".join((head, episode_id, request, reply))


def pack_wire(episode_id: bytes, idx: int, t: float, latency_ms: float, request: bytes, reply: bytes) -> bytes:
    """A ``W`` payload, as the first ring release wrote them (the tests of replaying them use it)."""
    head = _WIRE.pack(b"W", len(episode_id), idx, t, latency_ms, len(request), len(reply))
    return b"".join((head, episode_id, request, reply))


def unpack_wire(payload: bytes) -> tuple[str, int, float, float, bytes, bytes]:
    _, n, idx, t, latency, n_req, n_rep = _WIRE.unpack_from(payload)
    at = _WIRE.size
    eid = payload[at : at + n].decode()
    at += n
    return eid, idx, t, latency, payload[at : at + n_req], payload[at + n_req : at + n_req + n_rep]


def pack_rows(rows: list[tuple[Any, ...]] | list[list[Any]]) -> bytes:
    return b"R" + orjson.dumps(rows)


def pack_end(episode_id: str, reason: str, t: float) -> bytes:
    return b"E" + orjson.dumps({"episode_id": episode_id, "end": reason, "t": t})


BYTES_KEY = "$bytes"  # a bytes value of an inserted row (packed tokens), base64 in the record


def _bytes_default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {BYTES_KEY: base64.b64encode(bytes(value)).decode("ascii")}
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def pack_insert(table: str, row: dict[str, Any]) -> bytes:
    return b"I" + orjson.dumps([table, row], default=_bytes_default)


def unpack_insert(payload: bytes) -> tuple[str, dict[str, Any]]:
    """``(table, row)`` of an ``I`` record (bytes values restored)."""
    table, row = orjson.loads(payload[1:])
    for key, value in row.items():
        if isinstance(value, dict) and BYTES_KEY in value:
            row[key] = base64.b64decode(value[BYTES_KEY])
    return table, row


def pack_wrap() -> bytes:
    return b"N"


def pack_jump(offset: int) -> bytes:
    return _JUMP.pack(b"J", offset)


def jump_target(payload: bytes) -> int:
    return _JUMP.unpack_from(payload)[1]


def progress_bytes(progress: Progress) -> bytes:
    body = _PROGRESS.pack(progress.lap, progress.offset)
    return body + _CRC.pack(zlib.crc32(body))


def read_progress(buf: Any) -> Progress | None:
    """The committer's progress from a control page (``None`` if torn mid-write)."""
    body = bytes(buf[PROGRESS_AT : PROGRESS_AT + _PROGRESS.size])
    (crc,) = _CRC.unpack_from(buf, PROGRESS_AT + _PROGRESS.size)
    if zlib.crc32(body) != crc:
        return None
    return Progress(*_PROGRESS.unpack(body))


def error_bytes(seq: int, code: str, message: str) -> bytes:
    body = orjson.dumps({"code": code, "message": message[:1500]})
    return _ERROR.pack(seq, len(body), zlib.crc32(body)) + body


def error_seq(buf: Any) -> int:
    return _CRC.unpack_from(buf, ERROR_AT)[0]


def read_error(buf: Any) -> tuple[int, str, str] | None:
    """``(seq, code, message)`` of the last reported commit error, if one is there whole."""
    seq, n, crc = _ERROR.unpack_from(buf, ERROR_AT)
    body = bytes(buf[ERROR_AT + _ERROR.size : ERROR_AT + _ERROR.size + min(n, ERROR_MAX)])
    if seq == 0 or zlib.crc32(body) != crc:
        return None
    try:
        value = orjson.loads(body)
        return seq, str(value["code"]), str(value["message"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None


_CHUNK = 1 << 18
_WRAP, _JUMP_KIND = ord("N"), ord("J")
_MAX_RECORD = 1 << 30


def scan(
    read: Callable[[int, int], bytes], cursor: Progress, *, limit: int = 8 << 20
) -> tuple[list[bytes], Progress]:
    """The payloads of the step, row and end records from ``cursor`` on (following wraps and
    jumps) up to the end mark, a record not (yet) whole, or about ``limit`` bytes; and the cursor
    after them. ``read(offset, n)`` reads the file (``os.pread``, or a slice of its bytes)."""
    lap, at = cursor
    out: list[bytes] = []
    append, crc32, unpack_header, h = out.append, zlib.crc32, HEADER.unpack_from, HEADER.size
    total = 0
    chunk, base, size = b"", at, 0
    while total < limit:
        rel = at - base
        if rel < 0 or rel + h > size:
            chunk, base, rel = read(at, _CHUNK), at, 0
            size = len(chunk)
            if size < h:
                break
        n, crc, rec_lap = unpack_header(chunk, rel)
        if n == 0 or rec_lap != lap or n > _MAX_RECORD:
            break
        body = rel + h
        stop = body + n
        if stop > size:
            chunk, base = read(at, max(_CHUNK, h + n)), at
            size, body, stop = len(chunk), h, h + n
            if stop > size:
                break
        payload = chunk[body:stop]
        if crc32(payload, lap) != crc:
            break
        kind = payload[0]
        if kind == _WRAP:
            lap, at = lap + 1, DATA_START
        elif kind == _JUMP_KIND:
            at = jump_target(payload)
        else:
            append(payload)
            total += n
            at += h + n
    return out, Progress(lap, at)


def start_of(data: bytes) -> Progress | None:
    """Where unfinished records of a journal file's bytes start (``None``: not a journal of ours)."""
    if data[:4] != MAGIC or len(data) < DATA_START:
        return None
    progress = read_progress(data)
    if progress is None:  # torn: the lap of the first record tells where to start
        lap = HEADER.unpack_from(data, DATA_START)[2] if len(data) >= DATA_START + HEADER.size else 0
        progress = Progress(lap or FIRST_LAP, DATA_START)
    return progress
