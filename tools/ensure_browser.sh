#!/usr/bin/env bash
# Make a real browser available for the UI tests: Debian's chromium, installed with apt-get when
# it is missing (root only; waiting for another apt-get's lock, tools/apt.sh). Playwright (a test dependency in setup.cfg) drives it through
# `executable_path`: `playwright install` downloads browsers from a site this machine does not
# reach, so the tests never call it. Idempotent: with chromium present it only prints its path.
set -euo pipefail
# apt_get: apt-get that waits for another one's lock (tools/apt.sh).
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

say() { echo "ensure_browser: $*" >&2; }

browser="$(command -v chromium || true)"
if [[ -z "$browser" ]]; then
  if [[ "$(id -u)" != 0 ]]; then
    say "need root to install chromium (sudo apt-get install chromium)"
    exit 1
  fi
  say "installing chromium with apt-get"
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
  browser="$(command -v chromium)"
fi
echo "$browser"
