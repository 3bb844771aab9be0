#!/usr/bin/env bash
# Local Debian bookworm base image for env images (no image registry needed), built once and
# cached by tag. Its /usr/bin/python3 is 3.11, so host wheelhouses must be cp311 manylinux x86_64.
set -euo pipefail

TAG=${OPENENV_BASE_IMAGE:-openenv-base:bookworm}
MIRROR=${OPENENV_DEBIAN_MIRROR:-http://deb.debian.org/debian}

if docker image inspect "$TAG" >/dev/null 2>&1; then
    echo "20-base-image: $TAG present" >&2
    exit 0
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
        --no-install-recommends debootstrap >/dev/null
fi

ROOT=$(mktemp -d /var/tmp/openenv-base.XXXXXX)
trap 'rm -rf "$ROOT"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$ROOT" "$MIRROR" >/dev/null
rm -rf "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/*
tar -C "$ROOT" -c . | docker import \
    --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' - "$TAG" >/dev/null
echo "20-base-image: built $TAG" >&2
