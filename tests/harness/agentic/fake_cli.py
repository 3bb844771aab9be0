"""A one-shot CLI agent in the style of ``opencode run --format json``: one process per turn.

``fake_cli.py run --format json <message>``: reads ``opencode.json`` in its working directory
(``{"mcp": {"env": {"type": "remote", "url": ...}}}``), keeps the conversation in
``.fake_cli_history.json`` beside it, prints JSON-line events (``step_start``, ``tool_use``,
``text``, ``step_finish``) and exits. ``use <tool> <json>`` calls an MCP tool; ``fail`` exits 2.
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from fake_harness import call_tool  # noqa: E402


def event(kind, **part):
    print(json.dumps({"type": kind, "part": part}), flush=True)


def main():
    assert sys.argv[1:3] == ["run", "--format"] and sys.argv[3] == "json", sys.argv
    message = sys.argv[4]
    config = json.loads(Path("opencode.json").read_text())
    history_file = Path(".fake_cli_history.json")
    history = json.loads(history_file.read_text()) if history_file.exists() else []
    history.append(message)
    event("step_start", session=len(history))
    word, _, rest = message.partition(" ")
    if word == "fail":
        sys.stderr.write("model provider refused\n")
        sys.exit(2)
    if word == "use":
        name, _, args = rest.partition(" ")
        text, is_error = call_tool(config["mcp"]["env"]["url"], name, json.loads(args or "{}"))
        event("tool_use", tool=name, input=json.loads(args or "{}"), output=text, error=is_error)
        answer = f"used {name}: {text}"
    else:
        answer = f"turn {len(history)}: {message}"
    event("text", text=answer)
    history_file.write_text(json.dumps(history))
    event("step_finish", reason="stop", cwd=os.getcwd())


if __name__ == "__main__":
    main()
