#!/usr/bin/env bash
# Make a Docker engine available on this machine, for the container tests and `make images`:
#   1. install docker.io (the engine) and mmdebstrap (to build the base image) with apt-get
#      when they are missing (root only), waiting for another apt-get's lock (tools/apt.sh);
#   2. start dockerd in the background when no engine answers, and wait until it does.
# Idempotent: with an engine already answering it only checks. The engine's log goes to
# $DISAUTO_DOCKERD_LOG (default /var/log/disauto-dockerd.log). When it started dockerd, its last
# line on stdout is "started dockerd <pid>", so a caller can stop the engine it caused to run.
#
# dockerd is tried with its defaults (overlay2, a bridge network) first; if it does not come up,
# once more with the settings that work in restricted kernels and containers
# (--storage-driver=vfs --iptables=false --bridge=none). The tasks of the embedded cluster use
# host networking, so they need no bridge.
set -euo pipefail
# apt_get: apt-get that waits for another one's lock (tools/apt.sh).
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

log_file="${DISAUTO_DOCKERD_LOG:-/var/log/disauto-dockerd.log}"
socket="/var/run/docker.sock"

say() { echo "ensure_docker: $*" >&2; }

answers() {
  # The engine's _ping over its socket; curl is not always there, python3 is.
  python3 - "$socket" <<'EOF' 2>/dev/null
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(3)
s.connect(sys.argv[1])
s.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
reply = s.recv(4096)
sys.exit(0 if b" 200 " in reply.split(b"\r\n", 1)[0] + b" " else 1)
EOF
}

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
if ((${#missing[@]})); then
  if [[ "$(id -u)" != 0 ]]; then
    say "need root to install ${missing[*]} (sudo apt-get install ${missing[*]})"
    exit 1
  fi
  say "installing ${missing[*]}"
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ -n "${DOCKER_HOST:-}" && "${DOCKER_HOST}" != unix://* ]]; then
  say "DOCKER_HOST=${DOCKER_HOST} is not a local socket: not starting an engine"
  exit 0
fi
socket="${DOCKER_HOST:-}"
socket="${socket#unix://}"
socket="${socket:-/var/run/docker.sock}"
if answers; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  say "no Docker engine answers at ${socket}, and starting dockerd needs root"
  exit 1
fi

start() {
  say "starting dockerd $* (log: ${log_file})"
  mkdir -p "$(dirname "${log_file}")"
  setsid nohup dockerd --host "unix://${socket}" "$@" >>"${log_file}" 2>&1 </dev/null &
  local pid=$!
  for _ in $(seq 1 60); do
    if answers; then
      return 0
    fi
    if ! kill -0 "${pid}" 2>/dev/null; then
      return 1
    fi
    sleep 0.5
  done
  kill "${pid}" 2>/dev/null || true
  return 1
}

if start || start --storage-driver=vfs --iptables=false --bridge=none; then
  echo "started dockerd $(cat /var/run/docker.pid 2>/dev/null || echo unknown)"
  exit 0
fi
say "dockerd did not start; the end of ${log_file}:"
tail -n 15 "${log_file}" >&2 || true
exit 1
