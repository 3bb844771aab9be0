"""Detection reads the source (never imports it) and says what it looked for when nothing fits."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv.importers.detect import DetectionError, detect, select
from tests.importers.helpers import SOURCES


@pytest.mark.parametrize(("source", "kind", "qualified"), [
    ("vf_single", "verifiers", "vf_single:load_environment"),
    ("vf_multi", "verifiers", "vf_multi:load_environment"),
    ("vf_tools", "verifiers", "vf_tools:load_environment"),
    ("ors_quiz", "ors", "quiz:CapitalQuiz"),
])  # fmt: skip
def test_detects_each_source(source: str, kind: str, qualified: str) -> None:
    found = select(SOURCES / source)
    assert (found.source_type, found.qualified_name) == (kind, qualified)


def test_detection_never_imports_the_source(tmp_path: Path) -> None:
    (tmp_path / "boom.py").write_text("import verifiers\nraise SystemExit('imported!')\n\n"
                                      "def load_environment():\n    pass\n")
    assert select(tmp_path).qualified_name == "boom:load_environment"


def test_ors_aliases_and_module_imports(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from openreward.environments import Environment as Base\nclass A(Base):\n    pass\n")
    (tmp_path / "b.py").write_text("import openreward.environments as orenv\nclass B(orenv.Environment):\n    pass\n"
                                   "class NotOne(object):\n    pass\n")
    assert sorted(d.qualified_name for d in detect(tmp_path)) == ["a:A", "b:B"]
    with pytest.raises(DetectionError, match=r"Multiple environment entrypoints .*a:A, b:B.*--env-class"):
        select(tmp_path)
    assert select(tmp_path, env_class="B").qualified_name == "b:B"
    assert select(tmp_path, env_class="a:A").class_name == "A"


@pytest.mark.parametrize("source", ["not_an_env", "vf_without_import"])
def test_no_environment_names_what_was_looked_for(source: str) -> None:
    with pytest.raises(DetectionError) as info:
        select(SOURCES / source)
    message = str(info.value)
    assert "No supported environment found" in message
    assert "load_environment()" in message and "Open Reward Standard Environment" in message


def test_type_filters_and_unknown_type(tmp_path: Path) -> None:
    with pytest.raises(DetectionError, match="verifiers: a module importing verifiers"):
        select(SOURCES / "ors_quiz", "verifiers")
    with pytest.raises(DetectionError, match="Unsupported source type 'gym'"):
        select(SOURCES / "vf_single", "gym")
    (tmp_path / "v.py").write_text("import verifiers\ndef load_environment():\n    pass\n")
    (tmp_path / "o.py").write_text("from ors import Environment\nclass O(Environment):\n    pass\n")
    with pytest.raises(DetectionError, match=r"Multiple source formats .*--type \(ors/verifiers\)"):
        select(tmp_path)
    assert select(tmp_path, "ors").qualified_name == "o:O"


def test_skips_virtualenvs_and_secrets(tmp_path: Path) -> None:
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "x.py").write_text("import verifiers\ndef load_environment():\n    pass\n")
    with pytest.raises(DetectionError):
        select(tmp_path)
