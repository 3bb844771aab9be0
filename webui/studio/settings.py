"""The studio's settings: one table (name, default, help), read from ``OPENENV_STUDIO_*``.

    settings = load_settings({"port": 8001})      # explicit values win over the environment
    settings.data_dir                              # a Path, created at start-up

Every setting is documented in ``docs/studio.md`` (a test checks it) and validated here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from openenv.core.env_server.auth import is_loopback
from openenv.core.origin_policy import OriginPolicy
from openenv.recording.default_store import default_store_target, xdg_studio_dir
from webui.studio.errors import SettingsError

__all__ = ["ENV_PREFIX", "SETTINGS", "Setting", "StudioSettings", "default_data_dir", "load_settings"]

ENV_PREFIX = "OPENENV_STUDIO_"


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/openenv-studio`` or ``~/.local/share/openenv-studio``."""
    return xdg_studio_dir()


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    help: str
    parse: Callable[[str], Any] = str


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _optional(text: str) -> str | None:
    return text or None


def _names(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


SETTINGS: tuple[Setting, ...] = (
    Setting("host", "127.0.0.1", "Address to bind; anything but loopback requires a token.", str),
    Setting("port", 8000, "Port to bind.", int),
    Setting("data_dir", None, "Where the episode database, runtime records and logs live "
            "(default $XDG_DATA_HOME/openenv-studio or ~/.local/share/openenv-studio).", Path),
    Setting("token", None, "Access token; required when binding a non-loopback address.", _optional),
    Setting("database", None, "Episode store: a SQLite path or postgresql:// URL (default $OPENENV_EPISODES_DB, else <data_dir>/episodes.db).",
            _optional),
    Setting("project", "studio", "Project name scoping the runtimes the studio starts, lists and re-adopts.", str),
    Setting("docker", True, "Use Docker/Swarm when the engine is reachable (false hides them).", _bool),
    Setting("docker_host", None, "Docker engine URL (default DOCKER_HOST or the local socket).", _optional),
    Setting("ray_address", None, "Ray cluster address (the head's host:port); when it answers, Ray is "
            "offered as a provider.", _optional),
    Setting("launch_timeout_s", 60.0, "Seconds an environment may take to become healthy.", float),
    Setting("page_size", 50, "Episodes per page in the episode list.", int),
    Setting("timeline_window", 25, "Steps listed around the shown step on an episode page.", int),
    Setting("log_lines", 200, "Log lines shown for a running environment.", int),
    Setting("play_idle_s", 900.0, "Seconds before an idle Play session is closed.", float),
    Setting("stale_session_s", 60.0, "Seconds idle after which an env's session is flagged: its client may be gone.",
            float),
    Setting("tokenizer", None, "A local tokenizer.json, or a directory holding one, whose text the token view "
            "shows for token ids (the view's own field overrides it).", _optional),
    Setting("allow_hosts", (), "Extra names the studio answers as its Host (comma-separated; see docs/security.md).",
            _names),
    Setting("allow_origins", (), "Other web origins allowed to post to the studio (comma-separated).", _names),
)


@dataclass(frozen=True)
class StudioSettings:
    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path = Path()
    token: str | None = None
    database: str | None = None
    project: str = "studio"
    docker: bool = True
    docker_host: str | None = None
    ray_address: str | None = None
    launch_timeout_s: float = 60.0
    page_size: int = 50
    timeline_window: int = 25
    log_lines: int = 200
    play_idle_s: float = 900.0
    stale_session_s: float = 60.0
    tokenizer: str | None = None
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()

    @property
    def database_target(self) -> str:
        """``database``, else ``$OPENENV_EPISODES_DB``, else ``<data_dir>/episodes.db``: the store
        ``openenv episodes`` and ``openenv rollout`` use too (``openenv.recording.default_store``)."""
        return self.database or default_store_target(data_dir=self.data_dir, create=False)

    @property
    def runtimes_dir(self) -> Path:
        return self.data_dir / "runtimes"

    def origin_policy(self) -> OriginPolicy:
        """The Host/Origin policy (``openenv.core.origin_policy``) from ``allow_*`` and ``host``."""
        return OriginPolicy.build(self.allow_hosts, self.allow_origins, bind_host=self.host)


def load_settings(
    overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> StudioSettings:
    """Defaults, then ``OPENENV_STUDIO_<NAME>`` variables, then ``overrides`` (``None`` = unset).

    Raises:
        SettingsError: an unknown name, a value that does not parse, or an unsafe combination.
    """
    environ = os.environ if environ is None else environ
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    known = {s.name: s for s in SETTINGS}
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise SettingsError(f"unknown studio setting(s): {', '.join(unknown)}", setting=unknown[0])
    values: dict[str, Any] = {}
    for s in SETTINGS:
        raw = environ.get(ENV_PREFIX + s.name.upper())
        value = overrides.get(s.name, raw if raw is not None else s.default)
        if isinstance(value, str) and s.parse is not str:
            try:
                value = s.parse(value)
            except ValueError as exc:
                raise SettingsError(f"{ENV_PREFIX}{s.name.upper()}: {exc}", setting=s.name) from exc
        values[s.name] = value
    if values["data_dir"] is None:
        values["data_dir"] = default_data_dir()
    values["data_dir"] = Path(values["data_dir"]).expanduser()
    settings = StudioSettings(**{f.name: values[f.name] for f in fields(StudioSettings)})
    _validate(settings)
    return settings


def _validate(s: StudioSettings) -> None:
    if not 0 <= s.port <= 65535:
        raise SettingsError(f"port {s.port} is out of range", setting="port")
    if not is_loopback(s.host) and not s.token:
        raise SettingsError(
            f"refusing to bind {s.host} without a token: the studio starts processes. "
            f"Pass --token (or {ENV_PREFIX}TOKEN), or bind 127.0.0.1.",
            setting="token",
        )
    if s.token is not None and len(s.token) < 8:
        raise SettingsError("the token must be at least 8 characters", setting="token")
    for name in ("page_size", "timeline_window", "log_lines"):
        if getattr(s, name) < 1:
            raise SettingsError(f"{name} must be at least 1", setting=name)
    for name in ("launch_timeout_s", "play_idle_s", "stale_session_s"):
        if getattr(s, name) <= 0:
            raise SettingsError(f"{name} must be positive", setting=name)
    try:
        s.origin_policy()
    except ValueError as exc:
        raise SettingsError(f"allow_origins: {exc}", setting="allow_origins") from None
