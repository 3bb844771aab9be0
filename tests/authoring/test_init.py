"""``openenv init`` writes 0.10's env layout (plus our tests/), or refuses cleanly as 0.10 does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from openenv.cli.init import ScaffoldError, class_prefix, render_scaffold, scaffold_names
from tests.authoring.conftest import openenv

# 0.10's scaffold, file for file (its template tree), then ours: the tests and pytest.ini.
EXPECTED_010 = {
    "README.md", "__init__.py", "client.py", "models.py", "openenv.yaml", "pyproject.toml",
    "server/__init__.py", "server/app.py", "server/guess_number_environment.py", "server/Dockerfile",
    "server/requirements.txt",
}
OURS = {"pytest.ini", "tests/test_contract.py", "tests/test_guess_number.py"}


def test_the_scaffold_has_every_part(scaffold: Path):
    files = {str(p.relative_to(scaffold)) for p in scaffold.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert files == EXPECTED_010 | OURS
    for rel in files:
        text = (scaffold / rel).read_text()
        assert "{{" not in text and "}}" not in text, rel
        if rel.endswith(".py"):
            ast.parse(text, filename=rel)
    env_py = (scaffold / "server/guess_number_environment.py").read_text()
    assert "class GuessNumberEnvironment(Environment)" in env_py
    assert 'env_name="guess_number"' in (scaffold / "server/app.py").read_text()


def test_the_manifest_and_pyproject_are_010s(scaffold: Path):
    manifest = yaml.safe_load((scaffold / "openenv.yaml").read_text())
    assert manifest["name"] == "guess_number" and manifest["app"] == "server.app:app" and manifest["port"] == 8000
    assert manifest["spec_version"] == 1 and manifest["type"] == "space" and manifest["runtime"] == "fastapi"
    pyproject = (scaffold / "pyproject.toml").read_text()
    assert 'name = "openenv-guess_number"' in pyproject and '"openenv>=0.2.2"' in pyproject
    readme = (scaffold / "README.md").read_text()
    assert readme.startswith("---\n") and "sdk: docker" in readme and "app_port: 8000" in readme and "- openenv" in readme


def test_the_client_imports_only_names_010_exports(scaffold: Path):
    """0.10's ``openenv.core`` has no ``StepResult``: the client takes it from ``client_types``."""
    tree = ast.parse((scaffold / "client.py").read_text())
    imports = {(node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               for alias in node.names}
    assert ("openenv.core", "EnvClient") in imports
    assert ("openenv.core.client_types", "StepResult") in imports
    assert ("openenv.core", "StepResult") not in imports


@pytest.mark.parametrize(("name", "prefix"), [("my_game_env", "MyGame"), ("test_env", "Test"), ("echo", "Echo"),
                                              ("complex_test_env", "ComplexTest"), ("guess_number", "GuessNumber")])
def test_class_prefixes_follow_010(name: str, prefix: str):
    assert class_prefix(name) == prefix


def test_names_become_placeholders():
    names = scaffold_names("my_cool_env")
    assert names["Prefix"] == "MyCool" and names["title"] == "My Cool Env" and names["image"] == "openenv-my_cool"


@pytest.mark.parametrize("name", ["1abc", "my env", "my-env", "", "json", "class", "openenv", "server"])
def test_bad_names_are_refused(name, tmp_path):
    with pytest.raises(ScaffoldError):
        render_scaffold(name, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("name", "words"), [("my-env", "not a valid Python identifier"), ("", "cannot be empty"),
                                             ("123_env", "not a valid Python identifier")])
def test_cli_refuses_names_as_010_does(tmp_path, name, words):
    done = openenv("init", name, cwd=tmp_path)
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_cli_refuses_a_non_empty_directory_with_one_line(tmp_path):
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "keep.txt").write_text("mine")
    done = openenv("init", "demo", "-o", str(tmp_path))
    assert done.returncode == 2
    assert "already exists and is not empty" in done.stderr and "Traceback" not in done.stderr
    assert [p.name for p in (tmp_path / "demo").iterdir()] == ["keep.txt"]


def test_cli_defaults_to_a_directory_named_after_the_env_in_cwd(tmp_path):
    done = openenv("init", "demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"Environment created successfully at: {tmp_path / 'demo'}" in done.stdout
    assert (tmp_path / "demo" / "server" / "demo_environment.py").is_file()


def test_an_empty_existing_directory_is_used(tmp_path):
    (tmp_path / "demo").mkdir()
    done = openenv("init", "demo", "--output-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "demo" / "openenv.yaml").is_file()
