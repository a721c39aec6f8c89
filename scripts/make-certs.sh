#!/usr/bin/env bash
# Makes a demo CA, a server certificate for localhost/127.0.0.1/::1 and a
# client certificate, all signed by that CA, valid for 10 years.
# For local use and tests only: never use these keys in production.
#   usage: scripts/make-certs.sh [DIR]   (default: etc/certs)
set -euo pipefail
dir=${1:-etc/certs}
mkdir -p "$dir"
cd "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/O=broker demo/CN=broker demo CA" \
  -keyout cakey.pem -out cacert.pem 2>/dev/null

printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth\n' > "$tmp/server.ext"
openssl req -newkey rsa:2048 -nodes -subj "/O=broker demo/CN=localhost" -keyout key.pem -out "$tmp/server.csr" 2>/dev/null
openssl x509 -req -in "$tmp/server.csr" -CA cacert.pem -CAkey cakey.pem -CAcreateserial -days 3650 \
  -extfile "$tmp/server.ext" -out cert.pem 2>/dev/null

printf 'extendedKeyUsage=clientAuth\n' > "$tmp/client.ext"
openssl req -newkey rsa:2048 -nodes -subj "/O=broker demo/CN=demo-client" -keyout client-key.pem -out "$tmp/client.csr" 2>/dev/null
openssl x509 -req -in "$tmp/client.csr" -CA cacert.pem -CAkey cakey.pem -CAcreateserial -days 3650 \
  -extfile "$tmp/client.ext" -out client-cert.pem 2>/dev/null

rm -f cacert.srl
chmod 600 cakey.pem key.pem client-key.pem
echo "wrote $(pwd): cacert.pem cakey.pem cert.pem key.pem client-cert.pem client-key.pem"
