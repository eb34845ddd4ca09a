#!/usr/bin/env bash
# Sourced by the tools that install with apt-get (ensure_docker.sh, ensure_browser.sh):
#   apt_get ARGS...   apt-get ARGS, noninteractive, that waits for another apt-get (or
#                     unattended-upgrades) to let go of its locks, as a person would, up to
#                     $DISAUTO_APT_LOCK_TIMEOUT seconds (default 600), instead of failing at once.
# apt's own DPkg::Lock::Timeout makes it wait for dpkg's locks (install, remove); `apt-get
# update` takes the lists lock (/var/lib/apt/lists/lock), which that option does not cover
# (apt 2.6), so an update that finds it held is tried again every 2 s until the same deadline.
# The update's output goes to stderr.

apt_get() {
  local timeout="${DISAUTO_APT_LOCK_TIMEOUT:-600}"
  local options=(-o "DPkg::Lock::Timeout=${timeout}")
  if [[ "${1:-}" != update ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get "${options[@]}" "$@"
    return
  fi
  local deadline=$((SECONDS + timeout)) said
  while true; do
    if said="$(DEBIAN_FRONTEND=noninteractive apt-get "${options[@]}" "$@" 2>&1)"; then
      [[ -z "${said}" ]] || printf '%s\n' "${said}" >&2
      return 0
    fi
    if [[ "${said}" != *"Could not get lock"* ]] || ((SECONDS >= deadline)); then
      printf '%s\n' "${said}" >&2
      return 1
    fi
    sleep 2
  done
}
