#!/bin/sh
# The image's entrypoint: for every Prefect setting PREFECT_NAME_FILE=/path in the environment,
# export PREFECT_NAME with the contents of /path and drop PREFECT_NAME_FILE, then run the command.
# Secrets reach the containers as files (compose secrets, Kubernetes Secret volumes), so no compose
# file, manifest or image holds them, and `docker inspect` shows only their paths. Other *_FILE
# variables are other tools' own (SSL_CERT_FILE names a CA bundle): they are left as they are.
# Then it refuses, in one line, a PostgreSQL database for Prefect beyond this host without TLS (below).
set -eu
for name in $(env | sed -n 's/^\(PREFECT_[A-Za-z0-9_]*\)_FILE=.*/\1/p'); do
    eval "path=\${${name}_FILE}"
    if [ ! -r "$path" ]; then
        echo "entrypoint: ${name}_FILE names $path, which cannot be read" >&2
        exit 1
    fi
    value=$(cat "$path")
    export "$name=$value"
    unset "${name}_FILE"
done

# PostgreSQL beyond this host only over TLS. Prefect's database is a loopback address, compose's
# own `postgres` service on this Docker host (VASE_DATABASE_ON_THIS_HOST=true), or it needs TLS:
# PREFECT_SERVER_DATABASE_SQLALCHEMY_CONNECT_ARGS_TLS_ENABLED=true (certificate and host name
# verified), or ssl=/sslmode= verify-full or require in PREFECT_SERVER_DATABASE_CONNECTION_URL.
url=${PREFECT_SERVER_DATABASE_CONNECTION_URL:-}
case "$url" in
    postgres*://*) host=$(printf '%s' "${url#*://}" | sed 's|[/?].*||; s|.*@||; s|^\[\([^]]*\)\].*|\1|; /^[^:]*:[0-9]*$/s|:[0-9]*$||') ;;
    "") host=${PREFECT_SERVER_DATABASE_HOST:-} ;;
    *) host= ;;  # SQLite: a file
esac
case "$host" in
    ""|localhost|127.*|::1|/*) ;;
    *)
        if [ "${VASE_DATABASE_ON_THIS_HOST:-}" != true ] \
            && [ "${PREFECT_SERVER_DATABASE_SQLALCHEMY_CONNECT_ARGS_TLS_ENABLED:-}" != true ] \
            && ! printf '%s' "$url" | grep -Eq '[?&](ssl|sslmode)=(verify-full|require)(&|$)'; then
            echo "entrypoint: PostgreSQL at $host is not on this host and the connection has no TLS: set PREFECT_SERVER_DATABASE_SQLALCHEMY_CONNECT_ARGS_TLS_ENABLED=true (and its TLS_CA_FILE), or ssl=verify-full in the connection URL" >&2
            exit 1
        fi ;;
esac
exec "$@"
