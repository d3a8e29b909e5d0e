#!/usr/bin/env bash
# Exits 1 with one line if something already listens on HOST:PORT, so that
# `make run` and `make run-dynamodb` say so before starting anything. The third
# argument names the make variable that picks another port (default PORT).
host=${1:-127.0.0.1}
port=${2:-8000}
variable=${3:-PORT}
if (: <"/dev/tcp/$host/$port") 2>/dev/null; then
    echo "Port $port on $host is already in use; choose another with $variable=..." >&2
    exit 1
fi
