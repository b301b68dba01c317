#!/bin/sh
# Runs `dris "$@"` (default `serve`) after two optional steps:
# - DRIS_ENV_FILES: comma-separated files of VAR=value lines read first (deploy/compose's init job
#   writes the contract address into one); a listed file that is missing stops the start.
# - VAR_FILE for each secret VAR that dris reads: the file holds the value instead (Docker and
#   Compose secrets, Kubernetes secret volumes), so that passwords and keys never sit in the
#   container's definition. Setting both VAR and VAR_FILE is refused.
# Exit 78 (EX_CONFIG) on a configuration problem.
set -eu

if [ -n "${DRIS_ENV_FILES:-}" ]; then
  old_ifs="$IFS"
  IFS=','
  for env_file in $DRIS_ENV_FILES; do
    IFS="$old_ifs"
    if [ ! -r "$env_file" ]; then
      echo "dris-entrypoint: DRIS_ENV_FILES names $env_file, which cannot be read" >&2
      exit 78
    fi
    set -a
    # shellcheck disable=SC1090
    . "$env_file"
    set +a
  done
  IFS="$old_ifs"
fi

for var in DRIS_ADMIN_TOKEN DRIS_ANCHORER_KEY DRIS_ANCHORER_KEYSTORE_PASSWORD NATS_PASSWORD NATS_TOKEN \
  REDIS_PASSWORD CLICKHOUSE_PASSWORD; do
  file_var="${var}_FILE"
  eval "file=\${$file_var:-}"
  if [ -z "$file" ]; then continue; fi
  eval "direct=\${$var:-}"
  if [ -n "$direct" ]; then
    echo "dris-entrypoint: both $var and $file_var are set; set only one" >&2
    exit 78
  fi
  if [ ! -r "$file" ]; then
    echo "dris-entrypoint: $file_var names $file, which cannot be read" >&2
    exit 78
  fi
  # Command substitution drops the trailing newline(s) an editor or `echo` leaves.
  value="$(cat "$file")"
  export "$var=$value"
  unset "$file_var"
done

exec dris "$@"
