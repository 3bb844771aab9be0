"""Serve the published 0.10's capture proxy on 127.0.0.1 (run by the 0.10 peer venv's python).

    python peer_capture.py LLM_URL PORT ENGINE_KEY
"""

import sys

import uvicorn

from openenv.core.harness.capture.server import create_app

llm_url, port, key = sys.argv[1], int(sys.argv[2]), sys.argv[3]
uvicorn.run(create_app(llm_url=llm_url, api_key=key), host="127.0.0.1", port=port, log_level="warning")
