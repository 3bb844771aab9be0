#!/usr/bin/env bash
# A local Docker registry for the `openenv push --registry` tests (idempotent; run as root by
# setup-system): Debian's docker-registry (the CNCF distribution registry) serving plain HTTP on
# 127.0.0.1:${OPENENV_REGISTRY_PORT:-55000} only, storage in ${OPENENV_REGISTRY_DATA}. Docker
# trusts loopback registries without TLS, so no daemon setting is needed. No image is pulled.
set -euo pipefail
PORT=${OPENENV_REGISTRY_PORT:-55000}
DATA=${OPENENV_REGISTRY_DATA:-/var/lib/openenv-test-registry}
CONF=$DATA/config.yml

if ! command -v docker-registry >/dev/null 2>&1; then
    # the package's service is not started here (no init system); we start our own below
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-registry >/dev/null
fi

up() { curl -fsS -o /dev/null "http://127.0.0.1:$PORT/v2/" 2>/dev/null; }

if ! up; then
    install -d -m 755 "$DATA/storage"
    cat > "$CONF" <<CONF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $DATA/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$PORT
CONF
    setsid nohup docker-registry serve "$CONF" >"$DATA/registry.log" 2>&1 < /dev/null &
    for _ in $(seq 1 100); do
        up && break
        sleep 0.1
    done
    up || { echo "registry: did not start, see $DATA/registry.log" >&2; tail -n 20 "$DATA/registry.log" >&2; exit 1; }
fi
echo "registry: ready on 127.0.0.1:$PORT" >&2
