#!/usr/bin/env bash
# The README's test command (after `npm ci`): ensures the servers the tests need, builds, lints,
# then runs the unit, conformance, integration, faults and cluster suites against real engines (the
# cluster suite against the local fleet: the ingest suite through its load balancer and the chaos
# run). Prints a closing line `N passed, N failed`.
#
#   scripts/test.sh                      all suites
#   scripts/test.sh unit conformance     only those folders of test/
#
# The bench suite (test/bench) is the benchmarks' own tests (statistics, comparison, report, refusals);
# the benchmarks themselves never run here.
set -uo pipefail
cd "$(dirname "$0")/.."

suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(unit conformance bench integration faults cluster)

fail_setup() {
  printf '%s\n' "setup failed: $*" >&2
  echo "0 passed, 1 failed"
  exit 1
}

# shellcheck source=scripts/tools.sh
source scripts/tools.sh || fail_setup "tools.sh"
set +e
for s in "${suites[@]}"; do
  if [ "$s" = faults ]; then
    ensure_strace >/dev/null || fail_setup "strace"
  fi
  if [ "$s" = integration ] || [ "$s" = faults ] || [ "$s" = cluster ]; then
    ensure_nats >/dev/null || fail_setup "nats-server"
    ensure_redis >/dev/null || fail_setup "redis-server"
    ensure_kubo >/dev/null || fail_setup "kubo"
  fi
  if [ "$s" = integration ]; then
    # The deployment checks (test/integration/deploy-*.test.ts): built or fetched once per machine.
    ensure_helm >/dev/null || fail_setup "helm"
    ensure_promtool >/dev/null || fail_setup "promtool"
    ensure_hadolint >/dev/null || fail_setup "hadolint"
    ensure_deploy_check >/dev/null || fail_setup "dris-deploy-check (deploy/checks)"
    ensure_systemd_analyze >/dev/null || fail_setup "systemd-analyze"
  fi
  if [ "$s" = cluster ]; then
    ensure_haproxy >/dev/null || fail_setup "haproxy"
    # ops-fleet checks every role's /metrics with promtool.
    ensure_promtool >/dev/null || fail_setup "promtool"
  fi
  if [ "$s" = bench ]; then
    ensure_chromium >/dev/null || fail_setup "chromium"
  fi
done

if [ -f scripts/build-native.sh ]; then
  if command -v cargo >/dev/null 2>&1; then
    bash scripts/build-native.sh release || fail_setup "native addon build"
    export DRIS_REQUIRE_BACKENDS="${DRIS_REQUIRE_BACKENDS:-native,wasm,js}"
  else
    echo "cargo not found: the native hashing backend is not built; wasm and js are tested" >&2
  fi
fi

npm run -s build || fail_setup "build (contracts and TypeScript)"
# ESLint, then the layer rules of src/ (.dependency-cruiser.cjs): a violation fails the run.
npm run -s lint || fail_setup "lint"

files=()
for s in "${suites[@]}"; do
  while IFS= read -r f; do files+=("$f"); done < <(find "dist/test/$s" -name '*.test.js' 2>/dev/null | sort)
done
[ ${#files[@]} -gt 0 ] || fail_setup "no test files under dist/test/{${suites[*]}}"

log="$(mktemp)"
npx tap --reporter=tap "${files[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

# tap's own summary is `# { total: N, pass: P, fail: F, ... }`; CI reads the plain line below.
summary="$(grep -E '^# \{ total:' "$log" | tail -n 1)"
# The failed points again, with their subtest path, where a reader of the run's tail sees them.
node scripts/tap-failures.mjs "$log" || true
rm -f "$log"
pass="$(printf '%s' "$summary" | sed -nE 's/.*pass: ([0-9]+).*/\1/p')"
failed="$(printf '%s' "$summary" | sed -nE 's/.*fail: ([0-9]+).*/\1/p')"
pass="${pass:-0}"
failed="${failed:-0}"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "$pass passed, $failed failed"
exit "$status"
