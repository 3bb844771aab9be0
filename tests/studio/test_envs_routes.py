"""Environment routes against a real studio: catalogue, launch (self-polling), running list,
runtime page, logs, stop, restart, attach by URL, failed starts with their log tail."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from tests.studio.conftest import StudioClient
from tests.studio.html import fragment, page


def test_envs_page_lists_bundled_envs_and_hides_docker(sc: StudioClient) -> None:
    doc = sc.page("/envs")
    targets = {row.attrs["data-target"] for row in doc.find_all("tr") if "data-target" in row.attrs}
    assert {"echo", "repl"} <= targets
    assert doc.by_id("running").attrs["hx-trigger"].startswith("every 3s")
    notice = doc.with_class("docker-off")
    assert notice and "turned off" in notice[0].text()
    assert doc.find("a", aria_current="page").text() == "Environments"


def test_home_redirects_to_envs(sc: StudioClient) -> None:
    resp = sc.http.get("/")
    assert resp.status_code == 303 and resp.headers["location"] == "/envs"


def test_running_fragment_and_full_page(sc: StudioClient, echo_rid: str) -> None:
    frag = sc.fragment("/envs/running")
    row = frag.find("tr", data_runtime=echo_rid)
    assert row is not None and row.attrs["data-status"] == "running"
    assert row.find("td", class_="health").text().strip() == "healthy"
    sessions = row.find("td", class_="mono sessions").text()
    assert "/" in sessions
    full = sc.page("/envs/running")
    assert full.by_id("running").find("tr", data_runtime=echo_rid) is not None


def test_launch_form_fragment_and_page(sc: StudioClient) -> None:
    key = sc.entry_key("echo")
    frag = sc.fragment(f"/envs/launch/{key}")
    form = frag.by_id("launch-form")
    assert form.find("select", name="provider").find("option", value="process") is not None
    assert form.find("input", name="port") is not None and form.find("input", name="memory") is None
    full = sc.page(f"/envs/launch/{key}")
    assert full.by_id("launch-panel").find("form", id="launch-form") is not None


def test_launch_with_bad_options_shows_errors_inline(sc: StudioClient) -> None:
    key = sc.entry_key("echo")
    resp = sc.post(f"/envs/launch/{key}", {"provider": "process", "port": "99999", "env_vars": "not a pair"})
    assert resp.status_code == 422
    form = fragment(resp.text).by_id("launch-form")
    errors = [li.text() for li in form.find_all("li")]
    assert "between 1 and 65535" in errors and any("NAME=value" in e for e in errors)
    assert form.find("input", name="port").attrs["value"] == "99999"
    resp = sc.post(f"/envs/launch/{key}", {"provider": "docker"})
    assert resp.status_code == 422 and "choose one of: process" in resp.text
    resp = sc.post(f"/envs/launch/{key}", {"provider": "process", "cpus": "2"}, htmx=False)
    assert resp.status_code == 303  # cpus is not a process option: ignored, the launch goes ahead
    rid = resp.headers["location"].rsplit("/", 1)[1]
    assert sc.wait_launch(rid).find("div").attrs["data-status"] == "running"
    resp = sc.post(f"/envs/launch/{key}", {"provider": "process", "port": "0"}, htmx=False)
    assert resp.status_code == 422 and page(resp.text).by_id("launch-form").find("ul", role="alert") is not None
    assert sc.post(f"/envs/r/{rid}/restart", htmx=False).status_code == 303
    assert sc.wait_launch(rid).find("div").attrs["data-status"] == "running"
    assert sc.post(f"/envs/r/{rid}/stop", htmx=False).status_code == 303


def test_plain_form_posts_without_javascript(sc: StudioClient) -> None:
    resp = sc.post("/envs/catalogue", {"target": "??"}, htmx=False)
    assert resp.status_code == 422
    doc = page(resp.text)
    assert doc.by_id("catalogue-target").attrs["value"] == "??" and doc.by_id("catalogue-err") is not None
    resp = sc.post("/envs/attach", {"url": "nope"}, htmx=False)
    assert resp.status_code == 422 and page(resp.text).by_id("attach-err") is not None
    resp = sc.post("/envs/catalogue", {"target": "tests.plain_form:app"}, htmx=False)
    assert resp.status_code == 303
    resp = sc.post(f"/envs/catalogue/{sc.entry_key('tests.plain_form:app')}/remove", htmx=False)
    assert resp.status_code == 303


def test_failed_start_shows_the_log_tail(sc: StudioClient, tmp_path: Path) -> None:
    env_dir = tmp_path / "broken_env"
    env_dir.mkdir()
    (env_dir / "app.py").write_text(textwrap.dedent("""
        raise SystemExit("broken env: missing API key BROKEN_KEY")
    """))
    resp = sc.post("/envs/catalogue", {"target": str(env_dir)})
    assert resp.status_code == 200
    rid = sc.post(f"/envs/launch/{sc.entry_key(str(env_dir))}", {"provider": "process"})
    rid = fragment(rid.text).find("div").attrs["data-runtime"]
    node = sc.wait_launch(rid)
    status = node.find("div")
    assert status.attrs["data-status"] == "failed"
    assert "hx-trigger" not in status.attrs  # stopped polling
    assert "missing API key BROKEN_KEY" in status.find("pre").text()
    running = sc.fragment("/envs/running").find("tr", data_runtime=rid)
    assert running.attrs["data-status"] == "failed"
    assert sc.post(f"/envs/r/{rid}/stop", **{"HX-Target": "running"}).status_code == 200
    assert sc.fragment("/envs/running").find("tr", data_runtime=rid) is None


def test_catalogue_add_and_remove(sc: StudioClient, tmp_path: Path) -> None:
    resp = sc.post("/envs/catalogue", {"target": "not a target"})
    assert resp.status_code == 422
    frag = fragment(resp.text)
    assert frag.by_id("catalogue-target").attrs["aria-invalid"] == "true"
    assert "neither an env directory" in frag.by_id("catalogue-err").text()
    resp = sc.post("/envs/catalogue", {"target": str(tmp_path)})
    assert resp.status_code == 422 and "no app.py" in resp.text
    resp = sc.post("/envs/catalogue", {"target": "tests.my_pkg.server:app"})
    row = fragment(resp.text).find("tr", data_target="tests.my_pkg.server:app")
    assert row is not None
    resp = sc.post(f"/envs/catalogue/{row.attrs['data-entry']}/remove")
    assert fragment(resp.text).find("tr", data_target="tests.my_pkg.server:app") is None
    assert sc.post(f"/envs/catalogue/{row.attrs['data-entry']}/remove").status_code == 404


def test_a_module_target_whose_package_does_not_exist_is_refused(sc: StudioClient) -> None:
    resp = sc.post("/envs/catalogue", {"target": "nosuchmod:app"})
    assert resp.status_code == 422
    assert "no module 'nosuchmod' can be found" in fragment(resp.text).by_id("catalogue-err").text()
    assert sc.page("/envs").find("tr", data_target="nosuchmod:app") is None


def test_runtime_page_logs_and_follow(sc: StudioClient, echo_rid: str) -> None:
    doc = sc.page(f"/envs/r/{echo_rid}")
    assert doc.find("section", data_runtime=echo_rid).attrs["data-status"] == "running"
    assert "serving echo" in doc.by_id("logs").text()
    frag = sc.fragment(f"/envs/r/{echo_rid}/logs", params={"follow": "1"})
    assert frag.by_id("logs").attrs["hx-trigger"] == "every 1s"
    unfollowed = sc.fragment(f"/envs/r/{echo_rid}/logs").by_id("logs").attrs
    assert unfollowed["hx-trigger"] == "studio:logs from:body"  # no polling: it reloads only after a restart
    assert sc.page(f"/envs/r/{echo_rid}/logs").by_id("logs") is not None
    assert sc.page(f"/envs/r/{echo_rid}/status").find("section", data_runtime=echo_rid) is not None


def test_unknown_runtime_is_a_readable_404(sc: StudioClient) -> None:
    doc = sc.page("/envs/r/nope", status=404)
    assert "no environment 'nope'" in doc.by_id("main").text()
    frag = sc.fragment("/envs/r/nope/logs", status=404)
    assert frag.find("div", role="alert") is not None
    assert sc.page("/no/such/page", status=404).by_id("main").text().count("nothing at this address") == 1


def test_attach_by_url(sc: StudioClient, echo_url: str) -> None:
    resp = sc.post("/envs/attach", {"url": "ftp://nowhere"})
    assert resp.status_code == 422 and "http://" in fragment(resp.text).by_id("attach-err").text()
    resp = sc.post("/envs/attach", {"url": "http://127.0.0.1:9"})
    assert resp.status_code == 422 and "does not answer /health" in resp.text
    resp = sc.post("/envs/attach", {"url": echo_url})
    assert resp.status_code == 200 and resp.headers["HX-Trigger"] == "studio:envs-changed"
    row = next(r for r in sc.fragment("/envs/running").find_all("tr")
               if r.attrs.get("data-status") == "attached" and echo_url in r.text())
    rid = row.attrs["data-runtime"]
    assert row.find("td", class_="health").text().strip() == "healthy"
    assert "Forget" in row.find("button").text()
    resp = sc.post(f"/envs/r/{rid}/restart")
    assert resp.status_code == 400 and "not ours to restart" in resp.text
    resp = sc.post(f"/envs/r/{rid}/stop")
    assert resp.headers["HX-Redirect"] == "/envs"


def test_launch_stop_and_restart(sc: StudioClient) -> None:
    rid = sc.launch("echo", env_vars="GREETING=hi\n")
    doc = sc.page(f"/envs/r/{rid}")
    assert "GREETING" in doc.text()
    pid_before = _pid(sc, rid)
    resp = sc.post(f"/envs/r/{rid}/restart")
    assert fragment(resp.text).find("div").attrs["data-status"] == "starting"
    assert sc.wait_launch(rid).find("div").attrs["data-status"] == "running"
    assert _pid(sc, rid) != pid_before
    resp = sc.post(f"/envs/r/{rid}/stop", htmx=False)
    assert resp.status_code == 303
    assert sc.fragment("/envs/running").find("tr", data_runtime=rid) is None
    assert not _alive(pid_before)


def _pid(sc: StudioClient, rid: str) -> int:
    url = next(r for r in sc.fragment("/envs/running").find_all("tr") if r.attrs.get("data-runtime") == rid)
    port = url.with_class("url-cell")[0].text().rsplit(":", 1)[1]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"--port" in cmd and port.encode() in cmd:
                return int(entry)
    raise AssertionError(f"no server process on port {port}")


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def test_restart_from_the_runtime_page_swaps_its_summary(sc: StudioClient) -> None:
    rid = sc.launch("echo")
    try:
        summary = sc.page(f"/envs/r/{rid}").by_id("runtime-summary")
        assert summary.attrs["data-status"] == "running"
        resp = sc.post(f"/envs/r/{rid}/restart", **{"HX-Target": "runtime-summary"})
        node = fragment(resp.text).by_id("runtime-summary")
        assert node.attrs["data-status"] == "starting" and node.attrs["hx-get"].endswith("/summary")
        sc.wait_launch(rid)
        resp = sc.http.get(f"/envs/r/{rid}/summary", headers={"HX-Request": "true"})
        node = fragment(resp.text).by_id("runtime-summary")
        assert node.attrs["data-status"] == "running"
        assert resp.headers["HX-Trigger"] == "studio:logs"  # the log panel reloads for the new process
        logs = sc.page(f"/envs/r/{rid}").by_id("logs")
        assert logs.attrs["hx-trigger"] == "studio:logs from:body" and logs.attrs["hx-get"].endswith("/logs")
        row = next(r for r in sc.fragment("/envs/running").find_all("tr") if r.attrs.get("data-runtime") == rid)
        assert row.with_class("url-cell")[0].text() in node.text()  # the current URL, not the old one
    finally:
        sc.post(f"/envs/r/{rid}/stop")


def test_stop_asks_first_while_sessions_are_open(sc: StudioClient) -> None:
    from openenv.core import GenericEnvClient

    rid = sc.launch("echo")
    try:
        row = sc.fragment("/envs/running").find("tr", data_runtime=rid)
        url = row.with_class("url-cell")[0].text().strip()
        assert "hx-confirm" not in row.find("button", class_="small stop").attrs
        with GenericEnvClient(base_url=url).sync() as client:
            client.reset()
            row = sc.fragment("/envs/running").find("tr", data_runtime=rid)
            stop = row.with_class("stop")[0]
            assert "1 session is open" in stop.attrs["hx-confirm"]
            summary = sc.page(f"/envs/r/{rid}").by_id("stop-button")
            assert "1 session is open" in summary.attrs["data-confirm"]
    finally:
        sc.post(f"/envs/r/{rid}/stop", htmx=False)
