"""``GenericEnvClient(provider=p)`` with no ``base_url`` (0.10's provider-owned startup), under
whichever ``openenv`` this interpreter has: the provider is started on connect, waited for, and
stopped on close; ``from_docker_image`` with a duck-typed provider.
``provider_owned_probe.py <serve_file.py> <env file>``; prints what happened."""

import asyncio
import socket
import subprocess
import sys
import time
import urllib.request

from openenv.core.generic_client import GenericAction, GenericEnvClient

SERVE, ENV_FILE = sys.argv[1], sys.argv[2]
events = []


class ServeProvider:
    """Serves ENV_FILE's ``app`` on a free port; its "image" is fixed at construction."""

    def __init__(self):
        self.process = None

    def start_container(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.process = subprocess.Popen([sys.executable, SERVE, ENV_FILE, "app", str(port)])
        events.append("start")
        return f"http://127.0.0.1:{port}"

    def wait_for_ready(self, base_url, timeout_s=60.0):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(base_url + "/health", timeout=2):
                    events.append("ready")
                    return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(base_url)

    def stop_container(self):
        events.append("stop")
        self.process.terminate()
        self.process.wait(timeout=30)


class DuckProvider(ServeProvider):
    """A 0.10-style provider that is no subclass of ours: ``start_container(image, ...)`` only."""

    def start_container(self, image, port=None, env_vars=None, **kwargs):
        events.append(f"image {image}")
        return super().start_container()


async def from_image():
    duck = DuckProvider()
    try:
        env = await GenericEnvClient.from_docker_image("any-image:latest", provider=duck)
        result = await env.reset(seed=7)
        print("from_docker_image reset", result.done)
        await env.close()
    finally:
        if duck.process is not None and duck.process.poll() is None:
            duck.process.kill()


class ImageProvider:
    def start_container(self, image, port=None):
        raise AssertionError("never called")


provider = ServeProvider()
try:
    with GenericEnvClient(provider=provider) as env:
        result = env.reset(seed=7)
        print("reset", result.done, result.reward)
        result = env.step(GenericAction(guess=7, style="polite"))
        print("step", result.done, result.reward)
finally:
    if provider.process is not None and provider.process.poll() is None:
        provider.process.kill()
print("events", events, "exited", provider.process.poll() is not None)
events.clear()
asyncio.run(from_image())
print("events", events)
for make in (lambda: GenericEnvClient(), lambda: GenericEnvClient(provider=ImageProvider()).sync().connect()):
    try:
        make()
        print("no error")
    except (ValueError, TypeError) as exc:
        print(type(exc).__name__, str(exc).split(" Start the provider")[0])
