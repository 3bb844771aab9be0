"""Where episodes go when nobody says: one answer for the studio, ``openenv rollout``,
``openenv episodes`` and library code, so what one records the others list.

In order: ``$OPENENV_EPISODES_DB`` (a SQLite path or ``postgresql://`` URL), else the studio's
``$OPENENV_STUDIO_DATABASE``, else ``episodes.db`` in the studio's data directory
(``$OPENENV_STUDIO_DATA_DIR``, else ``$XDG_DATA_HOME/openenv-studio``, else
``~/.local/share/openenv-studio``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["DEFAULT_STORE_ENV", "STUDIO_DATABASE_ENV", "STUDIO_DATA_DIR_ENV", "default_store_target", "studio_data_dir",
           "xdg_studio_dir"]

DEFAULT_STORE_ENV = "OPENENV_EPISODES_DB"
STUDIO_DATABASE_ENV = "OPENENV_STUDIO_DATABASE"
STUDIO_DATA_DIR_ENV = "OPENENV_STUDIO_DATA_DIR"


def xdg_studio_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/openenv-studio``, else ``~/.local/share/openenv-studio``."""
    env = os.environ if environ is None else environ
    return Path(env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")) / "openenv-studio"


def studio_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The studio's data directory (``$OPENENV_STUDIO_DATA_DIR``, else :func:`xdg_studio_dir`);
    not created here."""
    env = os.environ if environ is None else environ
    if env.get(STUDIO_DATA_DIR_ENV):
        return Path(env[STUDIO_DATA_DIR_ENV]).expanduser()
    return xdg_studio_dir(env)


def default_store_target(environ: Mapping[str, str] | None = None, *, data_dir: Path | None = None,
                         create: bool = True) -> str:
    """The episode store to use when none is given; ``data_dir`` stands for the studio's data
    directory (the studio passes its own). A SQLite file's folder is created unless ``create=False``."""
    env = os.environ if environ is None else environ
    for name in (DEFAULT_STORE_ENV, STUDIO_DATABASE_ENV):
        if env.get(name):
            return env[name]
    folder = data_dir if data_dir is not None else studio_data_dir(env)
    if create:
        folder.mkdir(parents=True, exist_ok=True)
    return str(folder / "episodes.db")
