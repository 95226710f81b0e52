#!/bin/sh
# The image's entrypoint: for every variable NAME_FILE=/path in the environment, export NAME with
# the contents of /path and drop NAME_FILE, then run the command. Secrets reach the containers as
# files (compose secrets, Kubernetes Secret volumes), so no compose file, manifest or image holds
# them, and `docker inspect` shows only their paths.
set -eu
for name in $(env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)_FILE=.*/\1/p'); do
    eval "path=\${${name}_FILE}"
    if [ ! -r "$path" ]; then
        echo "entrypoint: ${name}_FILE names $path, which cannot be read" >&2
        exit 1
    fi
    value=$(cat "$path")
    export "$name=$value"
    unset "${name}_FILE"
done
exec "$@"
