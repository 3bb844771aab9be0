"""A loopback fake agentic harness: a real process speaking JSON lines on stdio (no openenv import).

Start-up: reads the MCP config the adapter wrote (path in ``FAKE_HARNESS_CONFIG``:
``{"mcp_url": ..., "tools": [...]}``), then prints ``{"type": "ready", "data": {...}}``.
Each stdin line is ``{"message": "..."}``; the harness answers with event lines
``{"type": <HarnessEventType value>, "data": {...}}``, the last ``turn_complete``. Messages:

- ``tool <name> <json arguments>``: calls the tool on the bridge (a real MCP client);
- ``ask <text>``: asks the OpenAI-compatible model at ``FAKE_MODEL_URL`` with the whole conversation;
- ``whoami``: answers its pid, process group and cwd as JSON;
- ``spawn``: starts a child ``sleep`` (same process group) and reports its pid;
- ``hang``: never answers; ``crash``: exits with code 3 mid-turn; ``noend``: ends its stream
  (``{"type": "end"}``) without ``turn_complete``; ``done``: completes with ``done: true``;
- anything else is echoed with the turn number.
"""

import json
import os
import subprocess
import sys
import time
import urllib.request


def emit(kind, **data):
    sys.stdout.write(json.dumps({"type": kind, "data": data}) + "\n")
    sys.stdout.flush()


def call_tool(url, name, arguments):
    import asyncio

    from fastmcp import Client

    async def run():
        async with Client(url) as client:
            result = await client.call_tool(name, arguments, raise_on_error=False)
            text = "".join(getattr(block, "text", "") for block in result.content)
            return text, bool(result.is_error)

    return asyncio.run(run())


def ask_model(history):
    body = json.dumps({"model": os.environ.get("FAKE_MODEL_NAME", "fake-model"), "messages": history}).encode()
    request = urllib.request.Request(
        os.environ["FAKE_MODEL_URL"].rstrip("/") + "/v1/chat/completions",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ.get("FAKE_API_KEY", "")},
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        payload = json.loads(reply.read())
    return payload["choices"][0]["message"]["content"], payload.get("usage", {})


def main():
    with open(os.environ["FAKE_HARNESS_CONFIG"]) as fh:
        config = json.load(fh)
    emit("ready", tools=config.get("tools", []), cwd=os.getcwd(), pgid=os.getpgid(0), pid=os.getpid())
    history = []
    turn = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)["message"]
        turn += 1
        history.append({"role": "user", "content": message})
        word, _, rest = message.partition(" ")
        done = False
        if word == "hang":
            time.sleep(3600)
        elif word == "crash":
            emit("text_output", text="about to crash")
            sys.stderr.write("fake harness: crashing on purpose\n")
            sys.stderr.flush()
            os._exit(3)
        elif word == "noend":
            emit("text_output", text="no turn_complete follows")
            emit("end")
            continue
        elif word == "tool":
            name, _, args = rest.partition(" ")
            arguments = json.loads(args or "{}")
            emit("tool_call", tool_name=name, arguments=arguments)
            text, is_error = call_tool(config["mcp_url"], name, arguments)
            emit("tool_result", tool_name=name, result=text, error=is_error)
            response = f"{name} -> {text}"
        elif word == "ask":
            emit("llm_request", messages=list(history), model=os.environ.get("FAKE_MODEL_NAME", "fake-model"))
            content, usage = ask_model(history)
            emit("llm_response", content=content, usage=usage)
            response = content
        elif word == "whoami":
            response = json.dumps({"pid": os.getpid(), "pgid": os.getpgid(0), "cwd": os.getcwd()})
        elif word == "spawn":
            child = subprocess.Popen(["sleep", "300"])
            response = f"child {child.pid}"
        else:
            done = word == "done"
            emit("text_output", text=f"echo: {message}")
            response = f"echo: {message} (turn {turn})"
        history.append({"role": "assistant", "content": response})
        emit("turn_complete", response=response, done=done)


if __name__ == "__main__":
    main()
