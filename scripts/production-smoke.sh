#!/usr/bin/env bash
# The production install of the README ("Running in production") done in a
# fresh clone of this repository's HEAD: npm ci, build once, prune the dev
# dependencies, then run `node bin/broker` under this machine's Node and under
# the oldest and the newest LTS that the npm registry's `node` package gives
# (`npx -p node@<major>`; PRODUCTION_SMOKE_NODES="22 24" by default, "" for
# none): each run starts the broker on ports the OS picks, does an MQTT
# publish/subscribe round trip (scripts/mqtt-round-trip.mjs: it needs no
# Debian package, so CI runs this before scripts/test.sh installs any), asks
# the management API's /status, and stops it with SIGTERM (exit 0 expected).
# Prints one line per step and `production smoke: ok` or
# `production smoke: FAILED: <why>`; exits non-zero on a failure.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
nodes=${PRODUCTION_SMOKE_NODES-22 24}
work=$(mktemp -d)
broker_pid=''
cleanup () {
  [ -z "$broker_pid" ] || kill -KILL "$broker_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
started=$SECONDS
step () { echo "production smoke [$((SECONDS - started))s]: $*"; }
fail () { echo "production smoke: FAILED: $*"; exit 1; }
quiet () { # runs a step, showing its output only when it fails
  local out
  if ! out=$("$@" 2>&1); then echo "$out" | tail -n 40; return 1; fi
}

if head=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null); then
  step "git clone $repo (HEAD $head)"
  git clone -q "$repo" "$work/broker" || fail 'git clone'
else
  step "$repo is no git checkout: copying it without node_modules and dist"
  mkdir "$work/broker" && tar -C "$repo" --exclude=./node_modules --exclude=./dist --exclude=./data -cf - . | tar -C "$work/broker" -xf - || fail 'copy'
fi
cd "$work/broker"
step 'npm ci'
quiet npm ci --no-audit --no-fund --prefer-offline || fail 'npm ci'
step 'npm run build'
quiet npm run build || fail 'npm run build'
step 'npm prune --omit=dev'
quiet npm prune --omit=dev --no-audit --no-fund || fail 'npm prune --omit=dev'
[ ! -e node_modules/typescript ] || fail 'npm prune --omit=dev left the dev dependencies'

# what the node imports at run time, every plugin included, resolves without the dev dependencies
step 'every plugin imports without the dev dependencies'
quiet node --input-type=module -e "
  import { readdirSync } from 'node:fs'
  for (const name of readdirSync('dist/plugins')) if (name.startsWith('broker_')) await import('./dist/plugins/' + name + '/index.js')
" || fail 'a plugin imports a package that npm prune --omit=dev removed'

# one run of the built broker under the Node at $1: start, round trip, /status, SIGTERM
run_broker () {
  local node=$1 data log port api
  data=$(mktemp -d "$work/data.XXXX")
  log="$data.log"
  "$node" bin/broker --version | grep -qE '^broker [0-9]+\.[0-9]+\.[0-9]+ \(Node\.js v[0-9.]+\)$' || fail "bin/broker --version under $node"
  # a new install's plugins (broker_management, broker_retainer, broker_modules), the API on a port the OS picks
  mkdir -p "$data/plugins"
  echo 'management.listener.http = 127.0.0.1:0' > "$data/plugins/broker_management.conf"
  "$node" bin/broker --data-dir "$data" --set listener.tcp.external=127.0.0.1:0 --set listener.ssl.external=off \
    --set listener.ws.external=off --set listener.wss.external=off --set log.console.level=info >"$log" 2>&1 &
  broker_pid=$!
  for _ in $(seq 600); do
    grep -q 'broker node is running' "$log" && break
    kill -0 "$broker_pid" 2>/dev/null || { cat "$log"; fail "the broker under $node exited before running"; }
    sleep 0.1
  done
  grep -q 'broker node is running' "$log" || { cat "$log"; fail "the broker under $node did not run within 60 s"; }
  port=$(sed -nE 's/.*"listener":"mqtt:tcp:external","address":"127\.0\.0\.1:([0-9]+)".*/\1/p' "$log" | head -n 1)
  api=$(sed -nE 's/.*"uri":"(http:[^"]+)".*"management API listening".*/\1/p' "$log" | head -n 1)
  [ -n "$port" ] && [ -n "$api" ] || { cat "$log"; fail 'no MQTT port or management API address in the log'; }
  "$node" scripts/mqtt-round-trip.mjs "$port" || fail "MQTT round trip under $node"
  "$node" -e "fetch('$api/status').then(async (r) => { const b = await r.json(); if (r.status !== 200 || b.status !== 'Running') throw new Error(JSON.stringify(b)) })" ||
    fail "GET /status under $node"
  kill -TERM "$broker_pid"
  local code=0
  wait "$broker_pid" || code=$?
  broker_pid=''
  [ "$code" -eq 0 ] && grep -q 'broker node stopped' "$log" || { cat "$log"; fail "the broker under $node did not stop cleanly (exit $code)"; }
}

step "run under $(node --version): start, MQTT round trip, /status, SIGTERM"
run_broker "$(command -v node)"
for major in $nodes; do
  step "fetch Node $major (npx -p node@$major)"
  bin=$(cd "$work" && npx -y -p "node@$major" -c 'command -v node' 2>/dev/null | tail -n 1) || true
  [ -x "$bin" ] || fail "no Node $major from the npm registry"
  step "run under $("$bin" --version): start, MQTT round trip, /status, SIGTERM"
  run_broker "$bin"
done
step "done in $((SECONDS - started)) s"
echo 'production smoke: ok'
