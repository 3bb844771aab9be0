"""Keeping the session's Ray test cluster alive across a long, loaded run, and saying what happened.

Hooks (imported into ``tests/conftest.py``):

- before every test that uses ``ray_cluster``, the cluster is checked (its ``ray start`` processes,
  GCS and raylets, and a TCP connect to the GCS): a dead one is reported, its logs are kept under
  ``test-artifacts/ray/``, this process's Ray driver is disconnected from it and it is started
  again on new ports, so a Ray test never depends on what ran before it;
- a failed test that uses the cluster gets a "ray test cluster" report section: healthy, or what
  died and what the cluster's logs and the kernel say, and where its logs were kept;
- the terminal summary lists every death with its cause.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.ray_cluster import LocalRayCluster

__all__ = ["ARTIFACTS", "DEATHS", "Death", "pytest_runtest_makereport", "pytest_runtest_setup",
           "pytest_terminal_summary", "revive", "unwatch", "watch"]

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "ray"
_WATCHED: list[LocalRayCluster] = []
_T0 = time.monotonic()


@dataclass
class Death:
    """One death of the watched cluster, found before ``where`` ran."""

    where: str
    after_s: float  # since the test session began
    cause: str
    report: str
    kept: Path | None
    restarted_in_s: float | None = None  # None: the restart failed

    def summary(self) -> str:
        restart = (f"restarted in {self.restarted_in_s:.0f} s" if self.restarted_in_s is not None
                   else "could not be restarted")
        return (f"found dead before {self.where} ({self.after_s / 60:.1f} min into the session), {restart}:\n"
                f"  {self.cause.replace(chr(10), chr(10) + '  ')}\n  logs kept in {self.kept}")


DEATHS: list[Death] = []


def watch(cluster: LocalRayCluster) -> None:
    """Check ``cluster`` before each test that uses ``ray_cluster`` (the session fixture's)."""
    _WATCHED.append(cluster)


def unwatch(cluster: LocalRayCluster) -> None:
    if cluster in _WATCHED:
        _WATCHED.remove(cluster)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[-120:]


def revive(cluster: LocalRayCluster, where: str, artifacts: Path = ARTIFACTS) -> Death | None:
    """Restart ``cluster`` if it died, recording the death (cause, diagnosis, kept logs); None if healthy."""
    if cluster.health() is None:
        return None
    cluster.settle()
    cause = cluster.health() or "it came back by itself"
    report = cluster.diagnosis()
    kept = cluster.keep_logs(artifacts / f"death-{len(DEATHS) + 1}-{_slug(where)}")
    if kept is not None:
        (kept / "diagnosis.txt").write_text(report)
    death = Death(where, time.monotonic() - _T0, cause, report, kept)
    DEATHS.append(death)
    import ray

    if ray.is_initialized():  # a driver left on a dead GCS would be ended by Ray, with this process
        ray.shutdown()
    began = time.monotonic()
    try:
        cluster.restart()
    except Exception as exc:
        raise RuntimeError(f"the Ray test cluster died and could not be restarted ({exc})\n"
                           f"{death.summary()}\n{report}") from exc
    death.restarted_in_s = time.monotonic() - began
    return death


def _uses_cluster(item: pytest.Item) -> bool:
    return "ray_cluster" in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if _WATCHED and _uses_cluster(item):
        revive(_WATCHED[-1], item.nodeid)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    report = yield
    if report.failed and _WATCHED and _uses_cluster(item):
        cluster = _WATCHED[-1]
        cause = cluster.health()
        text = (cluster.diagnosis() if cause else
                f"healthy at {cluster.address} (started {cluster.starts} time(s) this session)")
        kept = cluster.keep_logs(ARTIFACTS / f"failed-{_slug(item.nodeid)}-{report.when}")
        earlier = "".join(f"\nearlier: {d.summary()}" for d in DEATHS)
        report.sections.append(("ray test cluster", f"{text}\nits logs: {kept}{earlier}"))
    return report


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if DEATHS:
        terminalreporter.section("Ray test cluster")
        for death in DEATHS:
            terminalreporter.write_line(death.summary())
