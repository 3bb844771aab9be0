"""The studio package's public names: sorted, present, none of them None."""

from __future__ import annotations

import webui.studio


def test_all_is_sorted_and_real() -> None:
    names = webui.studio.__all__
    assert names == sorted(names)
    for name in names:
        assert getattr(webui.studio, name) is not None
