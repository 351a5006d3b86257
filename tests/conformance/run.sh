#!/usr/bin/env bash
# `make conformance`: go-tfe's own integration suites (v1.41.0, v1.109.0 in both its modes, and 0.11.1, from
# ../shared/conformance)
# against a FRESH local stack on a port of its own (never the developer's `make dev`), then the stack stops.
#
# Usage: tests/conformance/run.sh [CONFORMANCE_DIR]   (default ../shared/conformance)
# Environment: GOTFE_RUN=REGEX runs a subset of both suites; CONFORMANCE_PORT picks the port (default: a free
# one); CONFORMANCE_SUITES="v1 v1109 v1109hcp v0" picks the suites (v1109hcp: v1.109 with ENABLE_TFE=0, the
# HCP-only and paid-feature tests); CONFORMANCE_OUT=DIR keeps the server log and the per-test
# TSVs there (default: a temp dir, removed). Every other GOTFE_* variable passes through to the scripts.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CONF=$(cd "${1:-$ROOT/../shared/conformance}" 2>/dev/null && pwd) || CONF=""
TERRACE=$ROOT/.venv/bin/terrace
PYTHON=$ROOT/.venv/bin/python
if [ -z "$CONF" ] || [ ! -f "$CONF/gotfe-v1.sh" ]; then
    echo "conformance: skipped: no go-tfe suites at ${1:-$ROOT/../shared/conformance} (gotfe-v1.sh, gotfe.sh)"
    exit 0
fi
[ -x "$TERRACE" ] || { echo "conformance: $TERRACE is missing: run 'make install'" >&2; exit 2; }

WORK=$(mktemp -d -t terrace-conformance-XXXXXX)
chmod 711 "$WORK"  # a root runner's job uids pass through it to their job folders (mktemp makes it 0700)
OUT=${CONFORMANCE_OUT:-$WORK/out}
mkdir -p "$OUT"
PORT=${CONFORMANCE_PORT:-$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
STACK_PID=""

stop_stack() {
    if [ -n "$STACK_PID" ] && kill -0 "$STACK_PID" 2>/dev/null; then
        kill -TERM "$STACK_PID" 2>/dev/null
        for _ in $(seq 150); do kill -0 "$STACK_PID" 2>/dev/null || break; sleep 0.2; done
        kill -0 "$STACK_PID" 2>/dev/null && kill -KILL "$STACK_PID" 2>/dev/null
        wait "$STACK_PID" 2>/dev/null
    fi
    STACK_PID=""
    [ -n "${CONFORMANCE_OUT:-}" ] || rm -rf "$WORK"
}
trap stop_stack EXIT
trap 'exit 130' INT TERM

# Hold Your Own Key: the stack's customer keys (a key file, as an operator of the embedded server keeps one).
HYOK_KEY=conformance-key
"$PYTHON" -c 'import base64, json, os, sys; json.dump({"keys": {sys.argv[2]: [base64.b64encode(os.urandom(32)).decode()]}}, open(sys.argv[1], "w"))' \
    "$WORK/hyok-keys.json" "$HYOK_KEY"
chmod 600 "$WORK/hyok-keys.json"

# The stack runs on the terraform versions this machine holds (go-tfe's runs need no download), in its own folder (its .terrace/dev.json is not the developer's) on its own port. It listens on
# loopback and sends from it, so its own addresses (GET /api/meta/ip-ranges) are loopback's, as its operator says.
LOOPBACK=127.0.0.1/32
(cd "$WORK" && TERRACE_TOOL_DOWNLOADS=false TERRACE_PORT=$PORT TERRACE_IP_RANGES_API=$LOOPBACK TERRACE_IP_RANGES_NOTIFICATIONS=$LOOPBACK \
    TERRACE_IP_RANGES_SENTINEL=$LOOPBACK TERRACE_IP_RANGES_VCS=$LOOPBACK TERRACE_HYOK_KEY_FILE=$WORK/hyok-keys.json \
    exec "$TERRACE" dev >"$OUT/server.log" 2>&1) &
STACK_PID=$!
DEV_JSON=$WORK/.terrace/dev.json
for _ in $(seq 600); do
    [ -s "$DEV_JSON" ] && break
    kill -0 "$STACK_PID" 2>/dev/null || { echo "conformance: the stack did not start:" >&2; tail -20 "$OUT/server.log" >&2; exit 2; }
    sleep 0.2
done
[ -s "$DEV_JSON" ] || { echo "conformance: the stack did not write $DEV_JSON in 120 s" >&2; exit 2; }
echo "conformance: fresh stack on https://localhost:$PORT (log: $OUT/server.log)"
# ENABLE_HYOK_INTEGRATION_TESTS=1: go-tfe's HYOK tests need an organization prepared with a working key (as a
# real deployment would have); the variables naming it pass through to the tests.
if [ "${ENABLE_HYOK_INTEGRATION_TESTS:-}" = 1 ]; then
    prepared=$("$PYTHON" "$ROOT/tests/conformance/hyok_prepare.py" "$DEV_JSON" "$HYOK_KEY" "$WORK/hyok-keys.json") ||
        { echo "conformance: preparing the HYOK organization failed" >&2; exit 2; }
    eval "$prepared"
    export ENABLE_HYOK_INTEGRATION_TESTS
    echo "conformance: HYOK organization $HYOK_ORGANIZATION_NAME prepared"
fi

status=0
for suite in ${CONFORMANCE_SUITES:-v1 v1109 v1109hcp v0}; do
    binary="" mode=""
    case "$suite" in
    v1) script=gotfe-v1.sh title="go-tfe v1.41.0" ;;
    v1109) script=gotfe-v1.sh title="go-tfe v1.109.0" binary=$CONF/gotfe-v1109/gotfe-v1109.test ;;
    v1109hcp) script=gotfe-v1.sh title="go-tfe v1.109.0, ENABLE_TFE=0" binary=$CONF/gotfe-v1109/gotfe-v1109.test mode=0 ;;
    v0) script=gotfe.sh title="go-tfe 0.11.1" ;;
    *) echo "conformance: unknown suite $suite (v1, v1109, v1109hcp, v0)" >&2; exit 2 ;;
    esac
    if [ -n "$binary" ] && [ ! -f "$binary" ]; then
        echo "conformance: $title skipped: $binary is missing"
        continue
    fi
    echo
    echo "== $title ($CONF/$script) =="
    env ${mode:+GOTFE_ENABLE_TFE=$mode} GOTFE_SERVER_LOG="$OUT/server.log" GOTFE_TSV="$OUT/$suite.tsv" \
        bash "$CONF/$script" "$DEV_JSON" $binary || status=1
done
exit $status
