"""REPL settings: one table (name, default, help), read from ``OPENENV_REPL_*`` variables."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, fields, replace

PREFIX = "OPENENV_REPL_"


@dataclass(frozen=True)
class Limits:
    """Per-worker limits. Every field can be set as ``OPENENV_REPL_<NAME>`` (upper case)."""

    cell_timeout_s: float = 10.0
    """Wall-clock seconds a cell may run before it is interrupted."""
    interrupt_grace_s: float = 0.5
    """Seconds an interrupted cell gets to stop before its worker is killed and restarted."""
    memory_mb: int = 1024
    """Address-space limit of each worker process (RLIMIT_AS), in MiB."""
    max_processes: int = 32
    """Processes a session may have at once (RLIMIT_NPROC; per session when the server is root)."""
    cpu_s: int = 3600
    """CPU seconds any one worker process may use in its life (RLIMIT_CPU backstop)."""
    file_mb: int = 256
    """Largest file a worker may write (RLIMIT_FSIZE), in MiB."""
    open_files: int = 256
    """Open file descriptors per worker process (RLIMIT_NOFILE)."""
    output_chars: int = 8192
    """Characters of stdout and of stderr kept per cell (the full size is still reported)."""
    repr_chars: int = 500
    """Characters kept per variable in ``locals_snapshot``."""
    network: bool = False
    """Leave the worker's network on (off means a fresh, empty network namespace)."""
    start_timeout_s: float = 15.0
    """Seconds a new worker may take to start and confine itself."""
    python: str = ""
    """Interpreter that runs workers (default /usr/bin/python3 if present, else this one)."""
    warm_workers: int = 2
    """Confined, never-used workers a server keeps ready so a reset need not start one (0: none)."""

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: object) -> Limits:
        """Defaults, then ``OPENENV_REPL_*`` variables, then ``overrides``; validated."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for f in fields(cls):
            raw = env.get(PREFIX + f.name.upper())
            if raw is None:
                continue
            kind = type(f.default)
            try:
                values[f.name] = raw.strip().lower() in ("1", "true", "yes", "on") if kind is bool else kind(raw)
            except ValueError as exc:
                raise ValueError(f"{PREFIX}{f.name.upper()}={raw!r} is not a valid {kind.__name__}") from exc
        values.update({k: v for k, v in overrides.items() if v is not None})
        limits = replace(cls(), **values)
        limits.validate()
        return limits

    def validate(self) -> None:
        """Raise ValueError on a limit that cannot work."""
        positive = ("cell_timeout_s", "interrupt_grace_s", "memory_mb", "max_processes", "cpu_s",
                    "file_mb", "open_files", "output_chars", "repr_chars", "start_timeout_s")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"REPL limit {name} must be positive, got {getattr(self, name)!r}")
        if not 0 <= self.warm_workers <= 64:
            raise ValueError(f"REPL setting warm_workers must be between 0 and 64, got {self.warm_workers!r}")

    def interpreter(self) -> str:
        """The worker interpreter actually used."""
        if self.python:
            return self.python
        return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable

    def rlimits(self) -> dict[str, int]:
        """The rlimits a worker applies to itself before running any cell."""
        return {
            "RLIMIT_AS": self.memory_mb << 20,
            "RLIMIT_CPU": self.cpu_s,
            "RLIMIT_FSIZE": self.file_mb << 20,
            "RLIMIT_NOFILE": self.open_files,
            "RLIMIT_CORE": 0,
        }

