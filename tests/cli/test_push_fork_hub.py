"""``openenv push`` (to a Space) and ``openenv fork`` speak the hub's API through huggingface_hub:
checked against a loopback hub (HF_ENDPOINT), and with no route to a hub they fail in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import run_cli
from tests.cli.fake_hub import USER


@pytest.fixture
def env_dir(tmp_path: Path) -> Path:
    done = run_cli("init", "hub_probe_env", "-o", str(tmp_path))
    assert done.returncode == 0, done.stderr
    (tmp_path / "hub_probe_env" / "notes.tmp").write_text("scratch")
    (tmp_path / "hub_probe_env" / "exclude.txt").write_text("*.tmp\n!keep.tmp\n")
    return tmp_path / "hub_probe_env"


def test_push_uploads_the_staged_space_and_sets_its_settings(env_dir: Path, fake_hub):
    hub, env = fake_hub
    done = run_cli("push", str(env_dir), "--exclude", "exclude.txt", "-e", "MODE=fast", "--secret", "KEY=s3cret",
                   "--hardware", "cpu-basic", "--private", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "s3cret" not in done.stdout + done.stderr
    space = hub.repos[f"spaces/{USER}/hub_probe_env"]
    assert space["create"]["type"] == "space" and space["create"]["sdk"] == "docker"
    assert space["create"]["visibility"] == "private" and space["create"]["hardware"] == "cpu-basic"
    files = space["files"]
    assert "Dockerfile" in files and "server/Dockerfile" not in files  # moved to the root for Spaces
    assert b"ENV ENABLE_WEB_INTERFACE=true" in files["Dockerfile"]
    assert "notes.tmp" not in files and "pytest.ini" in files and "server/app.py" in files
    assert b"base_path: /web" in files["README.md"] and b"sdk: docker" in files["README.md"]
    assert space["variables"] == {"MODE": "fast"} and space["secrets"] == {"KEY": "s3cret"}
    assert "Skipped 1 negated ignore patterns" in done.stdout
    assert f"/spaces/{USER}/hub_probe_env" in done.stdout


def test_push_count_and_repo_id_and_base_image(env_dir: Path, fake_hub):
    hub, env = fake_hub
    done = run_cli("push", "-r", "team_env", "-n", "2", "-b", "python:3.12-slim", "--no-interface", cwd=env_dir,
                   env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    for i in (1, 2):
        files = hub.repos[f"spaces/{USER}/team_env-{i}"]["files"]
        assert files["Dockerfile"].startswith(b"#") and b"FROM python:3.12-slim" in files["Dockerfile"]
        assert b"ENABLE_WEB_INTERFACE" not in files["Dockerfile"]


def test_fork_duplicates_a_space(env_dir: Path, fake_hub):
    hub, env = fake_hub
    assert run_cli("push", str(env_dir), env=env).returncode == 0
    done = run_cli("fork", f"{USER}/hub_probe_env", "-r", f"{USER}/my_fork", "--set-env", "A=1", "-s", "B=2",
                   env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    dup = hub.repos[f"spaces/{USER}/my_fork"]["duplicate"]
    assert dup["repository"] == f"{USER}/my_fork" and dup["hardware"] == "cpu-basic"
    assert dup["variables"] == [{"key": "A", "value": "1"}] and dup["secrets"] == [{"key": "B", "value": "2"}]
    assert f"/spaces/{USER}/my_fork" in done.stdout and "2" not in done.stdout.split("Space URL")[0].split("Forking")[0]


@pytest.mark.parametrize("args", [["push"], ["fork", "someone/space"]])
def test_no_route_to_the_hub_is_one_clean_line(env_dir: Path, args):
    # port 9 on loopback: nothing listens, as with no route to huggingface.co
    done = run_cli(*args, cwd=env_dir, env={"HF_ENDPOINT": "http://127.0.0.1:9", "HF_TOKEN": "hf_x"}, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "cannot reach the Hugging Face Hub at http://127.0.0.1:9" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_wrong_token_says_so(env_dir: Path, fake_hub):
    _, env = fake_hub
    done = run_cli("push", str(env_dir), env=env | {"HF_TOKEN": "hf_wrong"})
    assert done.returncode == 1 and "not authorized" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("args", "words"), [
    (["push", "--count", "2", "--registry", "localhost:5000"], "--count cannot be used with --registry"),
    (["push", "--registry", "localhost:5000", "-e", "A=1"], "--env-var/--secret cannot be used with --registry"),
    (["push", "-e", "novalue"], "Invalid --env-var format"),
    (["push", "--secret", "hidden"], "Invalid --secret format: <redacted>"),
    (["fork", "not-a-space"], "Invalid source Space ID"),
])
def test_bad_arguments_are_refused_before_any_hub_call(env_dir: Path, args, words):
    done = run_cli(*args, cwd=env_dir, env={"HF_ENDPOINT": "http://127.0.0.1:9"})
    assert done.returncode in (1, 2) and words in done.stderr and "Traceback" not in done.stderr


def test_push_outside_an_env_directory(tmp_path: Path):
    done = run_cli("push", cwd=tmp_path)
    assert done.returncode == 1 and "missing openenv.yaml" in done.stderr
