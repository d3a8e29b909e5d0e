#!/usr/bin/env bash
# `make run-dynamodb`: the API on scripts/local_server.py, stored in a throwaway
# moto DynamoDB on loopback, with dummy credentials, so no AWS account is touched.
# Make passes HOST, PORT, MOTO_PORT, MOTO_MAX_MB, WORKFLOW_TABLE, BIN and
# CHALICE_LOCAL_FLAGS. What stops what (docs/deploy.md, "Try the DynamoDB storage
# without an AWS account"): moto lives as long as this script; an API server
# killed by another signal than INT, TERM or HUP starts again on the same moto,
# unless it was killed within RESTART_SECONDS of its start.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-.venv/bin}
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
MOTO_HOST=127.0.0.1
MOTO_PORT=${MOTO_PORT:-5000}
MOTO_LOG=${MOTO_LOG:-.data/moto.log}
MOTO_MAX_MB=${MOTO_MAX_MB:-1024}
RESTART_SECONDS=5

unset AWS_PROFILE AWS_SESSION_TOKEN AWS_IGNORE_CONFIGURED_ENDPOINT_URLS
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
export AWS_DEFAULT_REGION=${AWS_DEFAULT_REGION:-${AWS_REGION:-us-east-1}}
export AWS_ENDPOINT_URL_DYNAMODB=http://$MOTO_HOST:$MOTO_PORT
export WORKFLOW_STORAGE=dynamodb WORKFLOW_TABLE=${WORKFLOW_TABLE:-approval-workflows}

answers() { (: <"/dev/tcp/$MOTO_HOST/$MOTO_PORT") 2>/dev/null; }

if [ "$PORT" = "$MOTO_PORT" ]; then
    echo "PORT and MOTO_PORT are both $PORT; choose another with MOTO_PORT=..." >&2
    exit 1
fi
bash scripts/port_free.sh "$HOST" "$PORT" PORT
bash scripts/port_free.sh "$MOTO_HOST" "$MOTO_PORT" MOTO_PORT
mkdir -p "$(dirname "$MOTO_LOG")"
# --lean: no copy of the table per transaction item; --max-mb: writes refused
# past that much memory (scripts/moto_server.py).
"$BIN/python" scripts/moto_server.py --host "$MOTO_HOST" --port "$MOTO_PORT" --lean \
    --max-mb "$MOTO_MAX_MB" >"$MOTO_LOG" 2>&1 &
moto=$!
trap 'kill "$moto" 2>/dev/null || true; wait "$moto" 2>/dev/null || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for _ in $(seq 100); do
    answers && break
    if ! kill -0 "$moto" 2>/dev/null; then
        echo "moto server did not start:" >&2
        cat "$MOTO_LOG" >&2
        exit 1
    fi
    sleep 0.1
done
answers || { echo "moto server does not answer on $AWS_ENDPOINT_URL_DYNAMODB" >&2; exit 1; }
echo "moto DynamoDB on $AWS_ENDPOINT_URL_DYNAMODB (log: $MOTO_LOG); Ctrl-C stops it with the API, and what it holds is gone"

# Without the stream the deployed relay reads: here the events are sent from the table.
"$BIN/python" scripts/create_table.py
while true; do
    started=$SECONDS
    status=0
    # Not exec: the EXIT trap stops moto when the server ends. The server's
    # standard error is this script's (fd 3); the shell's own "Killed" notice
    # is not written (the line below says it).
    # shellcheck disable=SC2086  # the flags are words to split
    { "$BIN/python" scripts/local_server.py --host "$HOST" --port "$PORT" --stage dev \
        ${CHALICE_LOCAL_FLAGS:-} 2>&3; } 3>&2 2>/dev/null || status=$?
    # 128 + the signal: INT (Ctrl-C), TERM and HUP stop everything; any other
    # (KILL above all) is a crash, and the server starts again on the same data.
    if ((status <= 129 || status == 130 || status == 143)); then
        exit "$status"
    fi
    if ((SECONDS - started < RESTART_SECONDS)); then
        echo "The API server was killed (signal $((status - 128))) within ${RESTART_SECONDS} s of its start; stopping moto too" >&2
        exit "$status"
    fi
    echo "The API server was killed (signal $((status - 128))); starting it again on the same moto: nothing stored is lost" >&2
done
