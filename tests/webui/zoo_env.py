"""An environment whose action is the zoo model, with reset parameters and rich observations.

No ``from __future__ import annotations`` here: the server reads ``reset``'s parameter
annotations as objects to build the reset form (string annotations are not resolved yet).
"""

import base64
import json
import struct
import time
import zlib
from typing import Any, ClassVar, Literal

from pydantic import Field

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata, Observation, State
from tests.webui.zoo import ZooAction


def tiny_png(width: int = 96, height: int = 48) -> str:
    """A real base64 PNG (a blue gradient), made here so tests need no files."""
    rows = b"".join(b"\x00" + b"".join(bytes((x * 2 % 256, 80, 200)) for x in range(width)) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    return base64.b64encode(png).decode()


class ZooObservation(Observation):
    echo: dict[str, Any] = {}
    echo_json: str = ""
    note: str = Field("", description="What happened")
    image: str = ""
    log: str = ""


class ZooState(State):
    last_text: str = ""
    difficulty: int = 1


class ZooEnvironment(Environment):
    """Plays back every action it gets; reward is the length of ``text``."""

    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = True

    def __init__(self) -> None:
        self._state = ZooState()

    def reset(self, seed: int | None = None, episode_id: str | None = None, difficulty: int = 1,
              board: Literal["small", "large"] = "small", **kwargs: Any) -> ZooObservation:
        self._state = ZooState(episode_id=episode_id or self.new_episode_id(), difficulty=difficulty)
        return ZooObservation(note=f"ready seed={seed} difficulty={difficulty} board={board}", reward=None)

    def step(self, action: ZooAction, timeout_s: float | None = None, **kwargs: Any) -> ZooObservation:
        if action.text == "boom":
            raise RuntimeError("kaboom from the environment")
        if action.text == "slow":
            time.sleep(1.5)
        self._state.step_count += 1
        self._state.last_text = action.text
        return ZooObservation(
            echo=action.model_dump(mode="json", by_alias=True),
            echo_json=json.dumps(action.model_dump(mode="json", by_alias=True), indent=1),
            note=f"step {self._state.step_count}: {action.text}\nsecond line",
            image=tiny_png(),
            log="\n".join(f"line {i}" for i in range(action.count * 200)),
            reward=float(len(action.text)),
            done=action.enabled,
        )

    @property
    def state(self) -> ZooState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(name="zoo", description="Every field kind, echoed back.", version="1.0")
