"""Step an MCP env in process (no server) and print what a 0.10 user sees, one JSON line per call.

``mcp_inprocess_probe.py <module file> <EnvClass>``: the result's type, ``result.data``,
``result.is_error`` and the observation's wire form (``serialize_observation``).
"""

import importlib.util
import json
import sys

from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.env_server.serialization import serialize_observation

spec = importlib.util.spec_from_file_location("probed_env", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
env = getattr(module, sys.argv[2])()
env.reset()
print(json.dumps({"tools": sorted(t.name for t in env.step(ListToolsAction()).tools)}))
for name, args in (("echo_message", {"message": "hi"}), ("echo_with_length", {"message": "abc"}),
                   ("no_such_tool", {})):
    obs = env.step(CallToolAction(tool_name=name, arguments=args))
    result = obs.result
    print(json.dumps({
        "tool": name,
        "type": type(result).__name__,
        "data": getattr(result, "data", "<no .data>"),
        "is_error": getattr(result, "is_error", None),
        "content_types": [type(c).__name__ for c in getattr(result, "content", None) or []],
        "error_type": obs.error.error_type.value if obs.error else None,
        "wire": serialize_observation(obs),
    }, sort_keys=True, default=str))
