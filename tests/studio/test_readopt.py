"""After a restart the studio finds the envs it started: the living come back, the dead are marked."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx

from openenv.core.containers.runtime import LocalProcessProvider
from tests.studio.conftest import StudioClient, make_settings, running_studio


def _client(url: str) -> StudioClient:
    sc = StudioClient(httpx.Client(base_url=url, timeout=60.0, trust_env=False))
    sc.page("/envs")
    return sc


def test_restart_readopts_living_and_marks_dead(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, project="readopt-test")
    try:
        with running_studio(settings, cleanup=False) as url:
            sc = _client(url)
            rid = sc.launch("echo")
            base_url = sc.fragment("/envs/running").find("tr", data_runtime=rid).with_class("url-cell")[0].text()
            sc.http.close()
        assert httpx.get(base_url + "/health", trust_env=False).status_code == 200  # outlived the studio

        with running_studio(settings, cleanup=False) as url:
            sc = _client(url)
            row = next(r for r in sc.fragment("/envs/running").find_all("tr") if base_url in r.text())
            assert row.attrs["data-status"] == "running" and "re-adopted" in row.text()
            assert row.find("td", class_="health").text().strip() == "healthy"
            new_rid = row.attrs["data-runtime"]
            assert new_rid == rid  # the same id: links saved before the restart still work
            assert sc.open_play(new_rid).status_code == 200
            sc.http.close()

        (info,) = LocalProcessProvider.list_runtimes(project="readopt-test", data_dir=settings.runtimes_dir)
        os.killpg(info.extra["pid"], signal.SIGKILL)
        _wait_dead(info.extra["pid"])

        with running_studio(settings) as url:
            sc = _client(url)
            row = sc.fragment("/envs/running").find("tr", data_runtime=new_rid)
            assert row.attrs["data-status"] == "exited" and "Forget" in row.find("button").text()
            assert sc.post(f"/envs/r/{new_rid}/stop", **{"HX-Target": "running"}).status_code == 200
            assert sc.fragment("/envs/running").find("tr", data_runtime=new_rid) is None
            sc.http.close()
        assert LocalProcessProvider.list_runtimes(project="readopt-test", data_dir=settings.runtimes_dir) == []
    finally:
        LocalProcessProvider.cleanup(project="readopt-test", data_dir=settings.runtimes_dir)


def _wait_dead(pid: int) -> None:
    import time

    for _ in range(200):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return
        if stat[stat.rindex(")") + 2] in "ZX":
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} did not die")
