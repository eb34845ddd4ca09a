#!/usr/bin/env bash
# Make a ZooKeeper server available for the tests that elect masters: Debian's `zookeeper`
# package (a real server and its Java runtime), installed with apt-get when it is missing (root
# only; waiting for another apt-get's lock, tools/apt.sh). Idempotent: with the package present it
# only prints what starts a server.
#
# Its last line on stdout is the Java class path of the server; a caller starts a standalone
# server of its own with
#   java -cp CLASSPATH org.apache.zookeeper.server.ZooKeeperServerMain PORT DATA_DIR
# (tests/zookeeper.py does), so no system service is started or changed. To point DisAuto at an
# existing ensemble instead, give `zk://HOST:PORT,.../PATH` (docs/local-mode.md).
set -euo pipefail
# apt_get: apt-get that waits for another one's lock (tools/apt.sh).
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

say() { echo "ensure_zookeeper: $*" >&2; }

jar=/usr/share/java/zookeeper.jar
if [[ ! -f "$jar" ]] || ! command -v java >/dev/null 2>&1; then
  if [[ "$(id -u)" != 0 ]]; then
    say "need root to install zookeeper (sudo apt-get install zookeeper)"
    exit 1
  fi
  say "installing zookeeper with apt-get"
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends zookeeper >&2
fi
# The package's configuration directory holds its log4j settings; the jar's manifest names the
# libraries it needs.
echo "/etc/zookeeper/conf:${jar}"
