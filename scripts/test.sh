#!/usr/bin/env bash
# Installs everything the tests need on a fresh Debian machine (Debian
# packages, then npm packages), lints, builds and runs the whole test suite.
# Extra arguments go to tap (e.g. a test file).
set -euo pipefail
cd "$(dirname "$0")/.."

debian_packages=()
command -v mosquitto_pub >/dev/null 2>&1 || debian_packages+=(mosquitto-clients)
command -v openssl >/dev/null 2>&1 || debian_packages+=(openssl)
# the database servers the auth plugins are tested against (started by the tests, never as services)
command -v redis-server >/dev/null 2>&1 || debian_packages+=(redis-server)
# the cluster's Sentinel failover test (test/85-cluster-sentinel)
command -v redis-sentinel >/dev/null 2>&1 || debian_packages+=(redis-sentinel)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || debian_packages+=(postgresql)
command -v mariadbd >/dev/null 2>&1 || debian_packages+=(mariadb-server)
command -v slapd >/dev/null 2>&1 || debian_packages+=(slapd)
command -v ldapadd >/dev/null 2>&1 || debian_packages+=(ldap-utils)
# stomp.py, the real STOMP client of broker_stomp's tests (run by Debian's /usr/bin/python3)
/usr/bin/python3 -c 'import stomp' >/dev/null 2>&1 || debian_packages+=(python3-stomp)
# libcoap's coap-client (the build without DTLS, coap-client-notls), a real CoAP client of broker_coap's tests
command -v coap-client-notls >/dev/null 2>&1 || debian_packages+=(libcoap3-bin)

if [ ${#debian_packages[@]} -gt 0 ]; then
  sudo=''
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "installing Debian packages: ${debian_packages[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${debian_packages[@]}" >/dev/null
fi

npm ci --no-audit --no-fund
npm run lint
npm test -- "$@"
