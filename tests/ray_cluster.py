"""A real multi-node Ray cluster on this machine, for tests and benches.

    with LocalRayCluster(nodes=[{"num_cpus": 2, "resources": {"head": 1}},
                                {"num_cpus": 2, "resources": {"worker": 1}}]) as cluster:
        provider = RayProvider(address=cluster.address)

Each node is its own ``ray start --block`` process (our child), on free ports with usage stats off, the dashboard off and a private temp dir, so clusters of other people on the
same machine never collide with it. Stopping ends only our processes: each ``ray start --block``
takes its node down on SIGTERM, and anything still running with our temp dir on its command line
is then killed by pid. ``ray stop`` (which ends every Ray process of the machine) is never used.

Where the nodes live: given a :class:`~tests.netns.PrivateNetwork`, the nodes start inside it and
register at its routable test address (10.250.0.1), exactly as nodes of a real cluster register at
their machines' addresses, so the token path of a real network is what the tests exercise; the
driver (this process's test thread) enters the namespace for as long as it drives the cluster
(``ray_driver``). Without one, the nodes are pinned to 127.0.0.1 (``tests/ray_node.py``), for the
few tests that need the machine's own namespace (a Docker engine publishes there).

``health()`` says what is wrong with a running cluster (a node's ``ray start`` ended, its GCS or a
raylet gone, the GCS refusing connections), ``diagnosis()`` adds what its logs and the kernel say,
``keep_logs(dest)`` copies its logs out of the temp dir and ``restart()`` starts it again on new
ports; ``tests/ray_reports.py`` uses them to keep the session's cluster alive between tests.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from openenv.core.containers.runtime.ports import free_port
from tests._require import require
from tests.netns import TEST_ADDRESS, PrivateNetwork, private_network_available
from tests.ray_diagnosis import (
    CoreProcess,
    core_processes,
    describe_exit,
    exits_seen_by_ray,
    gcs_refusal,
    keep_logs,
    log_report,
)
from tests.ray_reports import unwatch, watch

__all__ = ["DRIVER_ENV", "LocalRayCluster", "ray_available", "ray_cluster", "ray_driver", "ray_network"]

_NODE = Path(__file__).with_name("ray_node.py")  # `ray start`, kept on 127.0.0.1
_RAY_START = ["-c", "import sys; from ray.scripts.scripts import main; sys.exit(main())"]  # plain `ray start`
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1"}
# A test machine may be loaded far beyond its cores: the nodes tolerate long stalls before Ray calls
# a node dead (default: 5 missed health checks of 10 s) or a raylet gives up on the GCS (60 s).
LOAD_TOLERANCE = {"RAY_health_check_timeout_ms": "30000", "RAY_health_check_failure_threshold": "20",
                  "RAY_gcs_rpc_server_reconnect_timeout_s": "600"}
# A driver on this machine keeps a loopback address as it is given (see RayProvider).
DRIVER_ENV = {**RAY_ENV, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def ray_available() -> bool:
    """Whether Ray is installed in this interpreter's environment."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


_NODE_PORT_FLAGS = ("--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
                    "--dashboard-agent-grpc-port", "--runtime-env-agent-port", "--metrics-export-port")
_START_ATTEMPTS = 3  # a port picked free can be taken before the node binds it: start that node again


class _Ports:
    """Free loopback ports, each handed out once per cluster: two components never share one
    (``free_port`` alone can return the same port twice while nothing listens on it yet)."""

    def __init__(self) -> None:
        self._given: set[int] = set()

    def take(self) -> int:
        for _ in range(1000):
            port = free_port()
            if port not in self._given:
                self._given.add(port)
                return port
        raise RuntimeError("no distinct free port on 127.0.0.1")

    def flags(self, names: tuple[str, ...]) -> list[str]:
        return [item for name in names for item in (name, str(self.take()))]


class _NodeExited(RuntimeError):
    def __init__(self, returncode: int, logs: str) -> None:
        super().__init__(f"a ray node exited with {returncode}:\n{logs}")
        self.logs = logs


class LocalRayCluster:
    """A head and worker nodes as separate ``ray start`` processes, in ``network`` or on 127.0.0.1."""

    def __init__(self, nodes: list[dict[str, Any]], *, network: PrivateNetwork | None = None,
                 start_timeout_s: float = 90.0) -> None:
        if not nodes:
            raise ValueError("a cluster needs at least its head node")
        self.nodes = nodes
        self.network = network
        self.host = TEST_ADDRESS if network is not None else "127.0.0.1"
        self.start_timeout_s = start_timeout_s
        self._procs: list[subprocess.Popen[bytes]] = []
        self._core: list[CoreProcess] = []
        self.starts = 0  # how many times this cluster was started (restarts after a death count)
        self._fresh()

    def _fresh(self) -> None:
        """A new temp dir and new ports, for a first start or a restart."""
        self.temp_dir = Path(tempfile.mkdtemp(prefix="roe-", dir="/tmp"))  # short: unix socket paths
        self._ports = _Ports()
        self.port = self._ports.take()
        self.address = f"{self.host}:{self.port}"

    def _start_node(self, index: int, spec: dict[str, Any]) -> None:
        launcher = _RAY_START if self.network is not None else [str(_NODE)]
        pinned = [] if self.network is not None else ["--node-ip-address", "127.0.0.1"]
        cmd = [sys.executable, *launcher, "start", "--block", "--disable-usage-stats", *pinned,
               "--num-cpus", str(spec.get("num_cpus", 1)), "--num-gpus", "0",
               "--resources", json.dumps(spec.get("resources", {})),
               "--object-store-memory", str(spec.get("object_store_memory", 80 * 1024 * 1024)),
               *self._ports.flags(_NODE_PORT_FLAGS)]
        if index == 0:
            cmd += ["--head", "--port", str(self.port), "--include-dashboard", "false",
                    *self._ports.flags(("--ray-client-server-port", "--dashboard-port")),
                    "--temp-dir", str(self.temp_dir)]
        else:
            cmd += ["--address", self.address]
        log = (self.temp_dir / f"node-{index}.log").open("wb")
        env = {**os.environ, **RAY_ENV, **LOAD_TOLERANCE}
        env.pop("RAY_ADDRESS", None)
        with log:
            self._procs.append(self._popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                           stdin=subprocess.DEVNULL, start_new_session=True))

    def _popen(self, cmd: list[str], **kwargs: Any) -> subprocess.Popen:
        return self.network.popen(cmd, **kwargs) if self.network is not None else subprocess.Popen(cmd, **kwargs)

    def run(self, cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
        """``subprocess.run`` where the cluster lives (inside its network, if it has one)."""
        return self.network.run(cmd, **kwargs) if self.network is not None else subprocess.run(cmd, **kwargs)

    @contextmanager
    def inside(self) -> Iterator[None]:
        """The calling thread where the cluster's addresses are reachable, for the block."""
        if self.network is None:
            yield
            return
        with self.network.inside():
            yield

    def start(self) -> LocalRayCluster:
        self.starts += 1
        try:
            for index, spec in enumerate(self.nodes):
                for attempt in range(_START_ATTEMPTS):
                    self._start_node(index, spec)
                    try:
                        self._await_nodes(index + 1)
                        break
                    except _NodeExited as exc:
                        if attempt + 1 == _START_ATTEMPTS or "port" not in exc.logs.lower():
                            raise
                        self._procs.pop().wait(timeout=10)  # the node lost a port race: new ports
                        if index == 0:  # nothing else of ours runs yet
                            self._kill_leftovers()
                            self.port = self._ports.take()
                            self.address = f"{self.host}:{self.port}"
        except BaseException:
            self.stop()
            raise
        self._core = core_processes(self.leftover_pids(), [p.pid for p in self._procs])
        return self

    def health(self) -> str | None:
        """None while every node's ``ray start``, GCS and raylet run and the GCS accepts
        connections; otherwise what is wrong, one problem a line."""
        if not self._procs:
            return "not running (never started, or stopped)"
        problems = [f"node {i} ({'head' if i == 0 else 'worker'}): `ray start` ended, {describe_exit(code)}"
                    for i, code in enumerate(p.poll() for p in self._procs) if code is not None]
        problems += [f"node {c.node}: {c.name} (pid {c.pid}) is gone" for c in self._core if not c.alive()]
        refused = gcs_refusal(self.host, self.port, self.inside)
        if refused is not None:
            problems.append(f"the head's GCS at {self.address} does not answer ({refused})")
        if problems:  # how Ray logged the ends it saw (read only when something is wrong)
            problems += exits_seen_by_ray(self.temp_dir)
        return "\n".join(problems) or None

    def settle(self, timeout_s: float = 5.0) -> None:
        """After a death, give each node's ``ray start --block`` (it looks once a second) the time
        to notice and log it, or to be seen still running."""
        deadline = time.monotonic() + timeout_s
        while any(p.poll() is None for p in self._procs) and time.monotonic() < deadline:
            time.sleep(0.2)

    def diagnosis(self) -> str:
        """What is wrong (``health``), then what the cluster's own logs and the kernel say."""
        pids = {c.pid for c in self._core} | {p.pid for p in self._procs}
        return f"{self.health() or 'healthy'}\n{log_report(self.temp_dir, pids)}"

    def keep_logs(self, dest: Path) -> Path | None:
        """Copy the cluster's logs (``ray start`` output, the session's logs) to ``dest``."""
        return keep_logs(self.temp_dir, dest)

    def restart(self) -> LocalRayCluster:
        """Stop what is left and start again on a new temp dir and new ports (``address`` changes)."""
        self.stop()
        self._fresh()
        return self.start()

    def _await_nodes(self, count: int) -> None:
        """Wait until ``count`` nodes are alive, asking the GCS from a throwaway process."""
        probe = ("import ray,sys; ray.init(address=sys.argv[1], logging_level='ERROR');"
                 "print(sum(n['Alive'] for n in ray.nodes()))")
        deadline = time.monotonic() + self.start_timeout_s
        last = ""
        while time.monotonic() < deadline:
            for proc in self._procs:
                if proc.poll() is not None:
                    raise _NodeExited(proc.returncode, self.node_logs())
            try:
                out = self.run([sys.executable, "-c", probe, self.address], capture_output=True,
                               text=True, timeout=30, env={**os.environ, **DRIVER_ENV})
                last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-500:]
                if out.returncode == 0 and int(last) >= count:
                    return
            except (subprocess.TimeoutExpired, ValueError):
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{count} ray nodes not up in {self.start_timeout_s}s ({last}):\n{self.node_logs()}")

    def node_logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-2000:] for p in sorted(self.temp_dir.glob("node-*.log")))

    def stop(self) -> None:
        """End our nodes (workers first) and every process still carrying our temp dir."""
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self._procs.clear()
        self._core = []
        for _ in range(3):
            if not self._kill_leftovers():
                break
            time.sleep(0.5)
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def leftover_pids(self) -> list[int]:
        """Pids of processes whose command line names our temp dir (none after ``stop``)."""
        marker = str(self.temp_dir).encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if marker in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
        return found

    def _kill_leftovers(self) -> bool:
        pids = self.leftover_pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return bool(pids)

    def __enter__(self) -> LocalRayCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@pytest.fixture(scope="session")
def ray_network() -> Iterator[PrivateNetwork]:
    """The private network namespace the test cluster lives in (10.250.0.1 on its loopback)."""
    require(private_network_available() is None, private_network_available() or "")
    with PrivateNetwork() as network:
        yield network


@pytest.fixture(scope="session")
def ray_cluster(ray_network: PrivateNetwork) -> Iterator[LocalRayCluster]:
    """A real two-node Ray cluster in a private network, once per session (registered in
    tests/conftest.py): head 2 CPUs + resource ``head``, worker 2 CPUs + resource ``worker``, both
    registered at 10.250.0.1 as nodes of a real network are at their addresses. Use it through
    ``ray_driver``, which puts the test thread where the cluster is reachable. Should it die, the
    next test using it gets it restarted (new ports: read ``address`` in the test, not at import)."""
    require(ray_available(), "Ray (pip install -e '.[ray]')")
    cluster = LocalRayCluster([{"num_cpus": 2, "resources": {"head": 1}},
                               {"num_cpus": 2, "resources": {"worker": 1}}], network=ray_network)
    cluster.start()
    watch(cluster)  # checked before each test that uses it, restarted if it died (tests/ray_reports.py)
    try:
        yield cluster
    finally:
        unwatch(cluster)
        cluster.stop()


@pytest.fixture(scope="module")
def ray_driver(ray_cluster: LocalRayCluster) -> Iterator[LocalRayCluster]:
    """The cluster, with the test thread inside its network for the module (what the module starts
    there, threads and processes, is born inside too); this process disconnects from Ray before the
    thread goes home, so no driver thread of Ray lingers through the rest of the suite."""
    with ray_cluster.inside():
        try:
            yield ray_cluster
        finally:
            import ray

            if ray.is_initialized():
                ray.shutdown()
