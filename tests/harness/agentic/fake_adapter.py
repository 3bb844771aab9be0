"""An ``AgenticHarnessAdapter`` for ``fake_harness.py``, written only against 0.10's public names.

The same file runs on ours and on the published 0.10 (differential tests import it in either
interpreter). Tools are injected as a JSON config file the harness reads at start-up.
"""

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from openenv.core.harness import (
    AgenticHarnessAdapter,
    HarnessConfig,
    HarnessEvent,
    HarnessEventType,
    HarnessNotRunningError,
    HarnessProcess,
)

FAKE_HARNESS = Path(__file__).with_name("fake_harness.py")


def fake_config(**overrides):
    """A ``HarnessConfig`` launching the fake harness with this interpreter."""
    values = {
        "name": "fake-harness",
        "command": [sys.executable, str(FAKE_HARNESS)],
        "working_directory": tempfile.gettempdir(),
        "startup_timeout_s": 30.0,
        "session_timeout_s": 20.0,
    }
    values.update(overrides)
    return HarnessConfig(**values)


class FakeHarnessAdapter(AgenticHarnessAdapter):
    """Drives ``fake_harness.py`` over stdio; its built-ins clash with env tools named like them."""

    BUILTIN_TOOL_NAMES = frozenset({"read_file", "bash"})

    def __init__(self, config=None, terminate_grace_s=2.0):
        super().__init__(config or fake_config())
        self.terminate_grace_s = terminate_grace_s
        self.process = None
        self.ready = None
        self.injected = None
        self._config_dir = None  # made when a config is written, removed once the harness read it

    @property
    def config_path(self):
        if self.config.mcp_config_path:
            return self.config.mcp_config_path
        if self._config_dir is None:
            self._config_dir = tempfile.mkdtemp(prefix="fake-harness-")
        return os.path.join(self._config_dir, "mcp.json")

    def _write_config(self):
        with open(self.config_path, "w") as fh:
            json.dump(self.injected, fh)

    async def inject_tools(self, tools, bridge_url=None):
        self.injected = {"mcp_url": bridge_url, "tools": [tool.name for tool in tools]}
        self._write_config()

    async def start(self, working_directory):
        if self.injected is not None and not os.path.exists(self.config_path):
            self._write_config()  # a restart: the previous start's file is gone
        env = {**self.config.env_vars, "FAKE_HARNESS_CONFIG": self.config_path}
        self.process = HarnessProcess(
            self.config.command, cwd=working_directory, env_vars=env,
            startup_timeout_s=self.config.startup_timeout_s, terminate_grace_s=self.terminate_grace_s,
        )

        def is_ready(line):
            try:
                frame = json.loads(line)
            except ValueError:
                return False
            if frame.get("type") == "ready":
                self.ready = frame["data"]
                return True
            return False

        try:
            await self.process.start(ready_check=is_ready)
        finally:  # the harness reads its config at start-up: nothing is left in the temp dir
            if self._config_dir is not None:
                shutil.rmtree(self._config_dir, ignore_errors=True)
                self._config_dir = None

    async def stop(self):
        if self.process is not None:
            await self.process.stop()

    async def is_alive(self):
        return self.process is not None and self.process.is_running()

    async def send_message_streaming(self, message):
        if self.process is None:
            raise HarnessNotRunningError("fake harness was never started")
        await self.process.write_line(json.dumps({"message": message}))
        while True:
            line = await self.process.read_line(timeout_s=0.5)
            if line is None:
                if not self.process.is_running():
                    raise HarnessNotRunningError("fake harness exited mid-turn")
                continue
            frame = json.loads(line)
            if frame["type"] == "end":
                return
            event = HarnessEvent(type=HarnessEventType(frame["type"]), data=frame.get("data", {}))
            yield event
            if event.type is HarnessEventType.TURN_COMPLETE:
                return
