#!/usr/bin/env bash
# git for openenv.core.tools.GitServerClient and its tests (tests/tools: a loopback Gitea
# stand-in serving bare repositories over git's HTTP protocol). Idempotent.
set -euo pipefail

if ! command -v git >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends \
        git ca-certificates >/dev/null
fi
