"""0.10's ``openenv.core.harness.capture.runner``: the proxy in a background thread.

Ours binds 127.0.0.1 unless given ``host`` (and then requires an ``admin_key``); 0.10 binds 0.0.0.0.
"""

from openenv.capture.server import CaptureServer

__all__ = ["CaptureServer"]
