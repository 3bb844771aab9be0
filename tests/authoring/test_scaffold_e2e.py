"""Straight out of ``openenv init``: the env's tests pass, ``openenv validate`` passes, ``openenv
serve`` serves it with its /web page, and ``openenv build`` builds an image that serves it too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from openenv.core.containers.runtime import LocalDockerProvider
from openenv.core.testing import run_wire_checks
from tests.authoring.conftest import OPENENV, openenv
from tests.server_utils import free_port, wait_healthy

IMAGE_TAG = "openenv-authoring-scaffold:test"


def test_the_generated_tests_pass(scaffold: Path):
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=scaffold,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "skipped" not in done.stdout


def test_validate_passes_on_the_directory(scaffold: Path):
    done = openenv("validate", str(scaffold))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FAIL" not in done.stdout and "PASS  env.step_after_done" in done.stdout


def test_serve_dir_answers_web_and_validates(scaffold: Path):
    port = free_port()
    proc = subprocess.Popen([*OPENENV, "serve", str(scaffold), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, timeout_s=60)
        page = httpx.get(f"{url}/web", timeout=30)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "guess_number" in page.text
        report = run_wire_checks(url, actions=[{"guess": 50}, {"guess": 1}])
        assert report.ok, report.format_text()
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_build_makes_an_image_that_serves_the_env(scaffold: Path, base_image: str, docker_provider: LocalDockerProvider):
    done = openenv("build", str(scaffold), "--tag", IMAGE_TAG, "--offline", "--base-image", base_image, "-q",
                   timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == IMAGE_TAG
    url = docker_provider.start_container(IMAGE_TAG, env_name="guess_number")
    docker_provider.wait_for_ready(url, timeout_s=120)
    assert httpx.get(f"{url}/web", timeout=30).status_code == 200
    report = run_wire_checks(url)
    assert report.ok, report.format_text()
