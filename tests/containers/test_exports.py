"""The runtime package's public names: sorted, real, importable."""

from __future__ import annotations

import openenv.core.containers.runtime as runtime


def test_all_is_sorted_and_every_name_is_real() -> None:
    assert runtime.__all__ == sorted(runtime.__all__)
    for name in runtime.__all__:
        assert getattr(runtime, name) is not None, name
