"""``ray start`` with the node pinned to the address it is given, even a loopback one.

Ray replaces a loopback ``--node-ip-address`` with the machine's outward address (so that other
machines could reach it); a cluster whose nodes all live on this machine must stay on 127.0.0.1.
Run as ``python tests/ray_node.py start ...`` (the arguments of ``ray start``).
"""

from __future__ import annotations

import sys

# `python tests/ray_node.py` puts tests/ first on sys.path, where a test folder could shadow a real
# package (tests/packaging once hid `packaging`, which Ray imports): drop it.
if sys.path and sys.path[0] and __file__.startswith(sys.path[0]):
    sys.path.pop(0)

import ray._private.services as services
from ray.scripts.scripts import main

services.resolve_ip_for_localhost = lambda host: host

if __name__ == "__main__":
    sys.exit(main())
