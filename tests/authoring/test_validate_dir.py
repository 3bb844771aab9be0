"""``openenv validate DIR``: package files, the contract in process, then the dir's own app over the wire."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.authoring.conftest import openenv

REPO = Path(__file__).resolve().parents[2]


def checks(stdout: str) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(stdout)["checks"]}


def test_a_dir_without_an_app_fails(tmp_path):
    done = openenv("validate", str(tmp_path), "--json")
    assert done.returncode == 1
    got = checks(done.stdout)
    assert got["package.app_module"]["status"] == "fail"
    assert "no app.py or server/app.py" in got["package.app_module"]["message"]


def test_an_app_that_does_not_import_fails(tmp_path):
    (tmp_path / "app.py").write_text("import no_such_module_here\n")
    done = openenv("validate", str(tmp_path), "--json")
    assert done.returncode == 1
    got = checks(done.stdout)
    assert got["package.app"]["status"] == "fail" and "no_such_module_here" in got["package.app"]["message"]


def test_missing_readme_and_tests_are_warnings_only(tmp_path):
    (tmp_path / "app.py").write_text("from openenv.envs.echo.app import app\n")
    done = openenv("validate", str(tmp_path), "--json")
    assert done.returncode == 0, done.stdout
    got = checks(done.stdout)
    assert {got[k]["status"] for k in ("package.readme", "package.tests", "package.requirements")} == {"warn"}
    assert got["env.reset"]["status"] == "pass" and got["ws.close"]["status"] == "pass"


def test_a_raw_app_gets_the_wire_checks_only(tmp_path):
    (tmp_path / "app.py").write_text("from tests.authoring.fake_server import fake_server\n\napp = fake_server()\n")
    done = openenv("validate", str(tmp_path), "--json", cwd=REPO)
    assert done.returncode == 0, done.stdout
    got = checks(done.stdout)
    assert got["package.app"]["status"] == "warn" and "not built by create_app" in got["package.app"]["message"]
    assert "env.reset" not in got and got["ws.capacity"]["status"] == "pass"


def test_a_scaffold_broken_by_its_author_is_caught(scaffold: Path, tmp_path):
    broken = tmp_path / "broken_guess"
    shutil.copytree(scaffold, broken, ignore=shutil.ignore_patterns("__pycache__"))
    env_py = broken / "server" / "guess_number_environment.py"
    env_py.write_text(env_py.read_text().replace("self._state.step_count += 1", "pass"))
    done = openenv("validate", str(broken))
    assert done.returncode == 1
    failed = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("  FAIL")]
    assert failed == ["env.state", "ws.reset_step_state", "http.episode"], done.stdout
    assert "state.step_count is 0 after 1 step(s)" in done.stdout
    assert done.stdout.rstrip().endswith("FAILED (3 check(s)): 26 checks")


def test_static_level_runs_no_env_code_and_output_writes_the_report(scaffold: Path, tmp_path):
    out = tmp_path / "report.json"
    done = openenv("validate", str(scaffold), "--level", "static", "--skip-build", "--policy", "v2",
                   "--output", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(out.read_text())
    assert report["verdict"] == "pass" and report["signature"] == "openenv.yaml" and report["levels_run"] == [1]
    assert report["policy_version"] == "v2" and report["lane"] == "local"
    assert [r["check_id"] for r in report["results"]] == [
        "package.manifest", "package.app_module", "package.readme", "package.tests", "package.requirements"]


def test_validate_defaults_to_the_current_directory(scaffold: Path):
    done = openenv("validate", "--level", "static", "--json", cwd=scaffold)
    assert done.returncode == 0 and json.loads(done.stdout)["target"] == str(scaffold.resolve())
