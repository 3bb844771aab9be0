"""Import ``<module file>`` once per ``TICK_BAD_CONFIG`` value given; print one JSON line each.

``import_probe.py <module file> <config>...``: ``ok`` or the error's type, message and fields.
"""

import importlib.util
import json
import os
import sys

path = sys.argv[1]
for config in sys.argv[2:]:
    os.environ["TICK_BAD_CONFIG"] = config
    spec = importlib.util.spec_from_file_location(f"probed_{config}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        result = {"ok": True}
    except Exception as exc:  # noqa: BLE001 - the error is the result
        result = {"ok": False, "type": type(exc).__name__, "message": str(exc),
                  "max_concurrent_envs": getattr(exc, "max_concurrent_envs", None),
                  "environment_name": getattr(exc, "environment_name", None)}
    print(json.dumps({"config": config, **result}, sort_keys=True))
