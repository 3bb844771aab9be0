"""The public surface of openenv.recording: explicit, sorted, complete, importable without pyarrow."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import openenv.recording as recording


def test_all_is_sorted_and_real() -> None:
    names = recording.__all__
    kind = lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n)  # noqa: E731 - constants, classes, functions
    assert names == sorted(names, key=kind)
    for name in names:
        assert getattr(recording, name) is not None, name
    classes = {n for n, v in vars(recording).items() if isinstance(v, type) and not n.startswith("_")}
    assert classes <= set(names)


def test_core_import_does_not_need_pyarrow(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['pyarrow'] = None\n"
        "import openenv.recording as r\n"
        "s = r.EpisodeStore(sys.argv[1])\n"
        "try:\n    r.export_parquet(s, sys.argv[1] + '.pq')\n"
        "except r.MissingExtraError as e:\n    print(e.code)\n"
    )
    db = str(tmp_path / "x.db")
    out = subprocess.run(
        [sys.executable, "-c", code, db], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.stdout.strip() == "MISSING_EXTRA", out.stderr


def test_postgres_url_without_driver_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "import openenv.recording as r\n"
        "try:\n    r.EpisodeStore('postgresql://u:p@127.0.0.1:1/db')\n"
        "except r.MissingExtraError as e:\n    print(e.code, 'psycopg[binary]' in str(e))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.stdout.strip() == "MISSING_EXTRA True", out.stderr
