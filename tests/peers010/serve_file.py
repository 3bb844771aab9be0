"""Serve ``<file.py> <attr> <port>`` with whichever ``openenv`` this interpreter has (ours or 0.10)."""

import importlib.util
import sys

import uvicorn

path, attr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, str(__import__("pathlib").Path(path).parent))
spec = importlib.util.spec_from_file_location("served_env_module", path)
module = importlib.util.module_from_spec(spec)
sys.modules["served_env_module"] = module
spec.loader.exec_module(module)
uvicorn.run(getattr(module, attr), host="127.0.0.1", port=port, log_level="warning", ws_per_message_deflate=False)
