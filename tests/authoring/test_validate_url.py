"""``openenv validate URL``: a real episode over WS and HTTP against running servers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from openenv.core.testing import run_wire_checks
from openenv.core.testing_wire_checks import WIRE_CHECKS
from tests.authoring.fake_server import fake_server
from tests.server_utils import running_server

OPENENV = [sys.executable, "-m", "openenv.cli.main"]


def statuses(report) -> dict[str, str]:
    return {r.name: r.status for r in report.results}


def test_the_echo_server_passes(echo_url):
    report = run_wire_checks(echo_url)
    assert report.ok, report.format_text()
    got = statuses(report)
    assert got["ws.capacity"] == "skip" and got["ws.step_after_done"] == "skip"
    assert [r.message for r in report.results if r.name == "ws.capacity"] == [
        "session cap 256 is above 16; not opening that many sockets"
    ]


def test_a_token_protected_server_needs_the_token():
    from openenv.core.env_server import create_app
    from openenv.core.env_server.auth import TokenAuthMiddleware
    from openenv.envs.echo import EchoEnvironment

    app = TokenAuthMiddleware(create_app(EchoEnvironment, env_name="echo", web=False), "s3cret")
    with running_server(app) as url:
        assert run_wire_checks(url, token="s3cret").ok
        refused = run_wire_checks(url)
    schema = next(r for r in refused.results if r.name == "http.schema")
    assert schema.status == "fail" and schema.message == "GET /schema answered 401 (a token is required: pass --token)"


def test_a_hand_written_server_that_follows_the_protocol_passes_every_check():
    with running_server(fake_server()) as url:
        report = run_wire_checks(url, timeout_s=10)
    assert report.ok, report.format_text()
    assert statuses(report) == {name: "pass" for name, _ in WIRE_CHECKS}


@pytest.mark.parametrize(
    ("broken", "check", "words"),
    [
        ("health", "http.health", "expected status 'healthy'"),
        ("schema", "http.schema", "'observation' is not a JSON schema"),
        ("unlifted", "ws.reset_step_state", "reply lacks reward, done"),
        ("bad_value", "ws.reset_step_state", "does not match /schema: $.value: expected integer"),
        ("random_reset", "ws.seed_determinism", "different first observations"),
        ("random_step", "ws.step_determinism", "different observation at step 1: $.observation.value"),
        ("frozen_state", "ws.reset_step_state", "step_count 0 after 1 step"),
        ("step_before_reset", "ws.step_before_reset", "refused a step before reset (STEP_BEFORE_RESET)"),
        ("uncoded_errors", "ws.error_shapes", "expected code INVALID_JSON, got None"),
        ("http_shape", "http.episode", "reply lacks observation, reward, done"),
        ("after_done", "ws.step_after_done", "the server closed the socket"),
        ("never_refuse", "ws.capacity", "expected an error CAPACITY_REACHED"),
        ("ignore_close", "ws.close", "kept the socket open"),
    ],
)
def test_each_broken_server_is_caught(broken, check, words):
    with running_server(fake_server(broken)) as url:
        report = run_wire_checks(url, timeout_s=3)
    results = {r.name: r for r in report.results}
    assert results[check].status == "fail", report.format_text()
    assert words in results[check].message
    assert not report.ok


def test_validate_url_json_report_and_exit_code(echo_url):
    with running_server(fake_server("random_reset")) as url:
        done = subprocess.run([*OPENENV, "validate", url, "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["ok"] is False and data["counts"]["fail"] == 2
    failed = [c for c in data["checks"] if c["status"] == "fail"]
    assert [c["name"] for c in failed] == ["ws.seed_determinism", "ws.step_determinism"]
    done = subprocess.run([*OPENENV, "validate", echo_url + "/ws", "--action", '{"message": "hi"}'],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS  ws.reset_step_state" in done.stdout and done.stdout.rstrip().endswith("checks")


@pytest.mark.parametrize(
    ("args", "code", "words"),  # the codes are 0.10's: 2 not a package directory, 3 bad level or policy
    [
        (["validate", "no/such/dir"], 2, "Error: not a package directory: no/such/dir"),
        (["validate", ".", "--level", "deep"], 3, "unknown level 'deep'"),
        (["validate", ".", "--policy", "v9"], 3, "no severity policy for version 'v9'"),
        (["validate", "--url", "http://127.0.0.1:9", "--local"], 1, "--local cannot be combined with a running URL"),
        (["validate", ".", "--url", "http://127.0.0.1:9"], 1, "Cannot combine a local path argument with --url"),
        (["validate", "http://127.0.0.1:9", "--action", "{oops"], 2, "Invalid value for --action: not JSON"),
        (["validate", "http://127.0.0.1:9", "--action", "[1]"], 2, "an action must be a JSON object"),
    ],
)
def test_cli_errors_are_one_clean_line(args, code, words):
    done = subprocess.run([*OPENENV, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == code
    assert words in done.stderr and "Traceback" not in done.stderr


def test_an_unreachable_server_fails_cleanly():
    done = subprocess.run([*OPENENV, "validate", "http://127.0.0.1:9", "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    checks = json.loads(done.stdout)["checks"]
    assert checks[0]["name"] == "http.health" and "CONNECTION_LOST" in checks[0]["message"]
