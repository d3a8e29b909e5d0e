#!/usr/bin/env bash
# Exits 1 with one line if something already listens on HOST:PORT, so that
# `make run` says so before starting anything.
host=${1:-127.0.0.1}
port=${2:-8000}
if (: <"/dev/tcp/$host/$port") 2>/dev/null; then
    echo "Port $port on $host is already in use; choose another with PORT=..." >&2
    exit 1
fi
