"""Studio errors, under the project's one tree.

    OpenEnvError
     └── StudioError                  STUDIO_ERROR
          ├── SettingsError           BAD_SETTING (setting)
          ├── NotFoundError           NOT_FOUND (what)
          ├── CatalogueError          BAD_TARGET
          └── PlayError               PLAY_ERROR
"""

from __future__ import annotations

from openenv.core.errors import OpenEnvError

__all__ = ["CatalogueError", "NotFoundError", "PlayError", "SettingsError", "StudioError"]


class StudioError(OpenEnvError):
    """Something the studio could not do; ``message`` is shown to the user as is."""

    code = "STUDIO_ERROR"
    status = 400


class SettingsError(StudioError):
    code = "BAD_SETTING"


class NotFoundError(StudioError):
    code = "NOT_FOUND"
    status = 404


class CatalogueError(StudioError):
    code = "BAD_TARGET"


class PlayError(StudioError):
    code = "PLAY_ERROR"
    status = 502
