#!/usr/bin/env bash
# REPL env workers: a system Python any uid can run (/usr/bin/python3, stdlib only, plus its
# venv module for the unprivileged-server tests), util-linux's unshare/setpriv (network
# namespace, uid drop, as root) and bubblewrap (user/PID/mount/IPC/network namespaces for
# workers of a server that is not root). Idempotent; no users are created: workers get uids
# from a pool (OPENENV_REPL_UID_BASE) without /etc/passwd entries.
set -euo pipefail

missing=()
[ -x /usr/bin/python3 ] || missing+=(python3-minimal)
/usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
command -v unshare >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
if [ "${#missing[@]}" -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends \
        "${missing[@]}" >/dev/null
fi
mkdir -p /run/openenv-repl
chmod 700 /run/openenv-repl
