"""``MCPToolClient`` with ``use_production_mode = False`` (0.10: tool calls go through ``step``) and
back to ``True`` (``/mcp``), against ``mcp_echo_env``. One JSON line per call."""

import json
import sys

from openenv.core.mcp_client import MCPToolClient

with MCPToolClient(base_url=sys.argv[1]).sync() as env:
    env.reset()
    client = env._client if hasattr(env, "_client") else env._async
    client.use_production_mode = False
    print(json.dumps({"tools": sorted(t.name for t in env.list_tools(use_cache=False))}))
    print(json.dumps({"value": env.call_tool("echo_message", message="hi"), "steps": env.state().step_count}))
    try:
        env.call_tool("nope")
    except RuntimeError as exc:
        print(json.dumps({"error": "nope" in str(exc) and "tool_not_found" in str(exc), "steps": env.state().step_count}))
    client.use_production_mode = True
    print(json.dumps({"value": env.call_tool("echo_message", message="yo"), "steps": env.state().step_count}))
