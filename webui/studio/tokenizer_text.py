"""Token ids as text through a tokenizer the user names (the studio's ``tokenizer`` setting, or the
token view's own field): a local ``tokenizer.json`` or a directory holding one (a Hugging Face
tokenizer saved with ``save_pretrained``). Nothing is downloaded; ``tokenizers`` is imported only
when a tokenizer is named. A loaded tokenizer is kept (by path and modification time) for the
next page; a path that does not load raises ``TokenizerError`` with the reason in words.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["TokenizerError", "decode_ids", "load_tokenizer"]

MAX_PATH = 4096
_KEEP = 4  # tokenizers kept loaded
_cache: OrderedDict[tuple[str, float], Any] = OrderedDict()
_lock = threading.Lock()


class TokenizerError(Exception):
    """The named tokenizer cannot be used (the message says why)."""


def _file(spec: str) -> Path:
    if len(spec) > MAX_PATH or "\x00" in spec:
        raise TokenizerError("that is not a file path")
    path = Path(spec).expanduser()
    if path.is_dir():
        inner = path / "tokenizer.json"
        if not inner.is_file():
            raise TokenizerError(f"{spec} is a directory without a tokenizer.json (a fast tokenizer's file, "
                                 "as tokenizer.save_pretrained writes it)")  # fmt: skip
        return inner
    if not path.is_file():
        raise TokenizerError(f"there is no file or directory {spec}")
    return path


def load_tokenizer(spec: str) -> Any:
    """The ``tokenizers.Tokenizer`` at ``spec`` (a ``tokenizer.json`` or a directory holding one)."""
    path = _file(spec.strip())
    try:
        key = (str(path.resolve()), path.stat().st_mtime)
    except OSError as exc:
        raise TokenizerError(f"cannot read {spec}: {exc.strerror or exc}") from None
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise TokenizerError("the tokenizers package is not installed (pip install tokenizers)") from None
    try:
        tokenizer = Tokenizer.from_file(key[0])
    except Exception as exc:  # noqa: BLE001 - the library raises plain Exceptions for bad files
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise TokenizerError(f"{spec} is not a tokenizer file ({first})") from None
    with _lock:
        _cache[key] = tokenizer
        while len(_cache) > _KEEP:
            _cache.popitem(last=False)
    return tokenizer


def decode_ids(tokenizer: Any, ids: Iterable[int]) -> dict[int, str]:
    """Each distinct id's text (decoded alone, special tokens kept); ids the vocabulary does not
    have are left out."""
    wanted = sorted({i for i in ids if isinstance(i, int) and 0 <= i < tokenizer.get_vocab_size(with_added_tokens=True)})
    if not wanted:
        return {}
    texts = tokenizer.decode_batch([[i] for i in wanted], skip_special_tokens=False)
    return {i: t if t else (tokenizer.id_to_token(i) or "") for i, t in zip(wanted, texts, strict=True)}
