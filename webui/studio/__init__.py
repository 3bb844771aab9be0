"""OpenEnv Studio: launch, list and play environments in the browser; browse, replay and export
every recorded episode (``openenv studio``)."""

from __future__ import annotations

from webui.studio.app import create_studio_app
from webui.studio.settings import SETTINGS, StudioSettings, load_settings

__all__ = ["SETTINGS", "StudioSettings", "create_studio_app", "load_settings"]
