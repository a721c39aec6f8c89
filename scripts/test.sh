#!/usr/bin/env bash
# Installs everything the tests need on a fresh Debian machine (Debian
# packages, then npm packages), lints, builds and runs the whole test suite.
# Extra arguments go to tap (e.g. a test file). Runs as root or as a user:
# sudo is used only when a Debian package is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
# the database servers live in the sbin folders, which a user's PATH lacks
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

step () { printf '\n==> %s\n' "$*"; }

debian_packages=()
# need <Debian package> <command that succeeds when it is installed>: one line per package, the one list to add to
need () { local package=$1; shift; "$@" >/dev/null 2>&1 || debian_packages+=("$package"); }
need mosquitto-clients command -v mosquitto_pub
need openssl command -v openssl
# the database servers the auth plugins are tested against (started by the tests, never as services)
need redis-server command -v redis-server
# the cluster's Sentinel failover test (test/85-cluster-sentinel)
need redis-sentinel command -v redis-sentinel
need postgresql compgen -G '/usr/lib/postgresql/*/bin/initdb'
need mariadb-server command -v mariadbd
need slapd command -v slapd
need ldap-utils command -v ldapadd
# stomp.py, the real STOMP client of broker_stomp's tests (run by Debian's /usr/bin/python3)
need python3-stomp /usr/bin/python3 -c 'import stomp'
# libcoap's coap-client (the build without DTLS, coap-client-notls), a real CoAP client of broker_coap's tests
need libcoap3-bin command -v coap-client-notls
# the headless browser of broker_dashboard's browser tests (driven by playwright-core, never a downloaded browser)
need chromium command -v chromium

if [ ${#debian_packages[@]} -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "missing Debian packages: ${debian_packages[*]}; install them as root (there is no sudo)" >&2; exit 1; }
    sudo=(sudo)
  fi
  step "installing Debian packages: ${debian_packages[*]}"
  "${sudo[@]}" apt-get update
  # apt's own progress (one line per download and per package set up) is left on the terminal
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${debian_packages[@]}"
fi

step 'npm ci (installs the npm packages, then applies patches/)'
npm ci --no-audit --no-fund
step 'npm run lint'
npm run lint
step "npm test${*:+ -- $*} (builds, then runs the tap suite)"
npm test -- "$@"
