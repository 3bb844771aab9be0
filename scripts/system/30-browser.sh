#!/usr/bin/env bash
# Debian's Chromium for the browser tests (Playwright drives it; never `playwright install`).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    chromium fonts-dejavu-core >/dev/null
/usr/bin/chromium --version >&2
