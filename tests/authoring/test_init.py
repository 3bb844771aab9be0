"""``openenv init`` writes a complete env package from the templates, or refuses cleanly."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from openenv.cli.init import ScaffoldError, render_scaffold, scaffold_names
from openenv.core.containers.images import dockerfile_path
from tests.authoring.conftest import openenv

EXPECTED = {
    "README.md",
    "Dockerfile",
    "app.py",
    "requirements.txt",
    "pytest.ini",
    "guess_number/__init__.py",
    "guess_number/app.py",
    "guess_number/client.py",
    "guess_number/environment.py",
    "guess_number/models.py",
    "tests/test_contract.py",
    "tests/test_guess_number.py",
}


def test_the_scaffold_has_every_part(scaffold: Path):
    files = {str(p.relative_to(scaffold)) for p in scaffold.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert EXPECTED <= files
    for rel in EXPECTED:
        text = (scaffold / rel).read_text()
        assert "{{" not in text and "}}" not in text, rel
        if rel.endswith(".py"):
            ast.parse(text, filename=rel)
    assert "class GuessNumberEnvironment(Environment)" in (scaffold / "guess_number/environment.py").read_text()
    assert 'env_name="guess-number"' in (scaffold / "guess_number/app.py").read_text()


def test_the_dockerfile_is_the_shared_one(scaffold: Path):
    text = (scaffold / "Dockerfile").read_text()
    assert text.endswith(dockerfile_path().read_text())
    assert text.startswith("# Copied from OpenEnv Studio's docker/Dockerfile")


def test_names_become_package_class_and_image():
    names = scaffold_names("my-cool_env", Path("/tmp/Some_Dir"))
    assert names == {"name": "my-cool_env", "package": "my_cool_env", "Class": "MyCoolEnv", "image": "some-dir"}


@pytest.mark.parametrize("name", ["1abc", "my env", "json", "app", "class", "openenv", "-x"])
def test_bad_names_are_refused(name, tmp_path):
    with pytest.raises(ScaffoldError):
        render_scaffold(name, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli_refuses_a_non_empty_directory_with_one_line(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    done = openenv("init", "demo", "--dir", str(tmp_path))
    assert done.returncode == 1
    assert "already exists and is not an empty directory" in done.stderr and "Traceback" not in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_cli_defaults_to_a_directory_named_after_the_env(tmp_path):
    done = openenv("init", "demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Created demo in demo" in done.stdout and "openenv serve ." in done.stdout
    assert (tmp_path / "demo" / "demo" / "environment.py").is_file()


def test_an_empty_existing_directory_is_used(tmp_path):
    written = render_scaffold("demo", tmp_path)
    assert (tmp_path / "app.py") in written
