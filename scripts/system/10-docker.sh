#!/usr/bin/env bash
# Docker engine for the container tests: install docker.io if missing, start dockerd in the
# background when it is not answering, and make this node a one-node swarm (idempotent).
set -euo pipefail

if ! command -v dockerd >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends \
        docker.io iptables ca-certificates >/dev/null
fi

# A pid file left by a killed engine (its process gone or a zombie) stops dockerd from starting.
clear_stale_pidfile() {
    local file=$1 pid state
    [ -f "$file" ] || return 0
    pid=$(cat "$file" 2>/dev/null || true)
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
    if [ -z "$pid" ] || [ -z "$state" ] || [ "$state" = Z ]; then
        rm -f "$file"
    fi
}

if ! docker info >/dev/null 2>&1; then
    clear_stale_pidfile /var/run/docker.pid
    clear_stale_pidfile /var/run/docker/containerd/containerd.pid
    mkdir -p /var/log
    setsid nohup dockerd >/var/log/openenv-dockerd.log 2>&1 < /dev/null &
    dockerd_pid=$!
    for _ in $(seq 1 120); do
        docker info >/dev/null 2>&1 && break
        kill -0 "$dockerd_pid" 2>/dev/null || break
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
