"""A loopback OpenAI-compatible chat model (stdlib HTTP server in a thread) for harness tests.

``POST /v1/chat/completions`` answers deterministically from the conversation it is sent
(``"model saw N messages; last: <text>"``) with a usage block, and records every request.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeModel:
    """``with FakeModel() as model:`` serves on ``model.url`` (``http://127.0.0.1:<port>``)."""

    def __init__(self):
        self.requests = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                if self.path != "/v1/chat/completions":
                    self.send_error(404)
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                model.requests.append({"body": body, "authorization": self.headers.get("Authorization")})
                messages = body.get("messages", [])
                last = messages[-1]["content"] if messages else ""
                content = f"model saw {len(messages)} messages; last: {last}"
                reply = {
                    "id": f"chatcmpl-{len(model.requests)}",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": sum(len(m["content"].split()) for m in messages),
                              "completion_tokens": len(content.split()),
                              "total_tokens": 0},
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
