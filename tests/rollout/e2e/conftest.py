"""Browser fixtures for the model pages: the studio e2e fixtures, a studio of this package's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.studio.conftest import make_settings, running_studio
from tests.studio.e2e.conftest import browser, page, shot  # noqa: F401 - shared browser fixtures


@pytest.fixture(scope="module")
def studio_e2e(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    data = tmp_path_factory.mktemp("studio-models-e2e")
    with running_studio(make_settings(data, project="e2e-models")) as url:
        yield url, data
