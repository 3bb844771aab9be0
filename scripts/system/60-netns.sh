#!/usr/bin/env bash
# Multi-node tests (the Ray cluster) run inside a private network namespace the test makes
# (tests/netns.py): iproute2's `ip` configures its loopback and test address. Idempotent.
set -euo pipefail

if ! command -v ip >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends \
        iproute2 >/dev/null
fi
