#!/usr/bin/env bash
# REPL env workers: a system Python any uid can run (/usr/bin/python3, stdlib only) and
# util-linux's unshare/setpriv (network namespace, uid drop). Idempotent; no users are created:
# workers get uids from a pool (OPENENV_REPL_UID_BASE) without /etc/passwd entries.
set -euo pipefail

missing=()
[ -x /usr/bin/python3 ] || missing+=(python3-minimal)
command -v unshare >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
if [ "${#missing[@]}" -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends \
        "${missing[@]}" >/dev/null
fi
mkdir -p /run/openenv-repl
chmod 700 /run/openenv-repl
