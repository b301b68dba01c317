#!/usr/bin/env bash
# Checks Prometheus exposition text with `promtool check metrics` (format and naming lint), and
# that it comes from dris (dris_build_info present): for every role's ops port after a deployment,
# or in CI against a file.
#
#   deploy/prometheus/check-metrics.sh http://api-1:9464/metrics http://indexer-1:9464/metrics ...
#   deploy/prometheus/check-metrics.sh deploy/prometheus/testdata/sample-metrics.prom
#   curl -s http://127.0.0.1:9464/metrics | deploy/prometheus/check-metrics.sh -
#
# A target is an http(s) URL (fetched with a 5 s deadline), a file, or - (standard input).
# promtool: $PROMTOOL, else promtool from scripts/tools.sh (built once into ~/.cache/dris-tools).
# Prints one line per target (`ok TARGET` or `FAIL TARGET: ...` with promtool's findings) and exits
# 0 when every target passes, 1 otherwise, 2 on usage.
set -uo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: $0 URL|FILE|- ..." >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
promtool="${PROMTOOL:-}"
if [ -z "$promtool" ]; then
  promtool="$(bash "$here/../../scripts/tools.sh" promtool)" || { echo "promtool unavailable" >&2; exit 2; }
fi

body="$(mktemp)"
trap 'rm -f "$body"' EXIT
failed=0
for target in "$@"; do
  case "$target" in
    http://*|https://*)
      if ! command -v curl >/dev/null 2>&1; then
        echo "FAIL $target: curl is needed to fetch a URL" >&2
        failed=1
        continue
      fi
      if ! curl -fsS --max-time 5 -o "$body" "$target" 2>"$body.err"; then
        echo "FAIL $target: $(cat "$body.err")"
        rm -f "$body.err"
        failed=1
        continue
      fi
      rm -f "$body.err"
      ;;
    -) cat > "$body" ;;
    *)
      if [ ! -r "$target" ]; then
        echo "FAIL $target: cannot read it"
        failed=1
        continue
      fi
      cp "$target" "$body"
      ;;
  esac
  if ! findings="$("$promtool" check metrics < "$body" 2>&1)"; then
    echo "FAIL $target: promtool check metrics:"
    printf '%s\n' "$findings" | sed 's/^/  /'
    failed=1
    continue
  fi
  if ! grep -Eq '^dris_build_info\{' "$body"; then
    echo "FAIL $target: no dris_build_info sample (not a dris ops endpoint?)"
    failed=1
    continue
  fi
  echo "ok $target"
done
exit "$failed"
