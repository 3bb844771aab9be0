#!/usr/bin/env bash
# Docker engine for the container tests: install docker.io if missing, start dockerd in the
# background when it is not answering, and make this node a one-node swarm (idempotent).
set -euo pipefail

if ! command -v dockerd >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends \
        docker.io iptables ca-certificates >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
    mkdir -p /var/log
    setsid nohup dockerd >/var/log/openenv-dockerd.log 2>&1 < /dev/null &
    for _ in $(seq 1 120); do
        docker info >/dev/null 2>&1 && break
        sleep 0.5
    done
    if ! docker info >/dev/null 2>&1; then
        echo "10-docker: dockerd did not come up; last log lines:" >&2
        tail -n 30 /var/log/openenv-dockerd.log >&2 || true
        exit 1
    fi
fi

if [ "$(docker info --format '{{.Swarm.LocalNodeState}}')" != "active" ]; then
    docker swarm init --advertise-addr 127.0.0.1 >/dev/null
fi
echo "10-docker: engine $(docker info --format '{{.ServerVersion}}'), swarm $(docker info --format '{{.Swarm.LocalNodeState}}')" >&2
