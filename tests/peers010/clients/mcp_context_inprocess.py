"""``step(CallToolAction)`` in process on ``mcp_context_env``: one JSON line per call."""

import json
import sys
from importlib.util import module_from_spec, spec_from_file_location

from openenv.core.env_server.mcp_types import CallToolAction

spec = spec_from_file_location("mcp_context_env", sys.argv[1])
module = module_from_spec(spec)
spec.loader.exec_module(module)
env = module.ContextToolsEnvironment()
for name, args in [("inc_counter", {}), ("inc_counter", {}), ("logged", {"x": 5}), ("has_session", {}), ("plain", {"x": 1})]:
    obs = env.step(CallToolAction(tool_name=name, arguments=args))
    print(json.dumps({"tool": name, "value": None if obs.error else obs.result.data, "error": obs.error is not None}))
env.close()
