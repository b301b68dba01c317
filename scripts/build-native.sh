#!/usr/bin/env bash
# Builds the native hashing addon (native/, Rust + Node-API) and copies it to
# native/dris-native.<platform>.node, where src/adapters/hashing/native-backend.ts finds it.
#
#   scripts/build-native.sh [release|debug] [--if-available]
#
# Built addons are cached under ${DRIS_TOOLS_DIR:-$HOME/.cache/dris-tools}/native/<key>/, the key
# being a hash of the crate sources, the profile and the Rust toolchain, so an unchanged crate is
# never compiled twice. --if-available turns "no cargo" into a notice (the js and wasm backends
# remain) instead of a failure.
set -euo pipefail

profile=release
soft=0
for arg in "$@"; do
  case "$arg" in
    release|debug) profile="$arg" ;;
    --if-available) soft=1 ;;
    *) echo "usage: $0 [release|debug] [--if-available]" >&2; exit 2 ;;
  esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
crate="$root/native"

platform="$(node -p 'process.platform + "-" + process.arch')"
if [ "$(uname -s)" = Linux ]; then
  if ldd --version 2>&1 | grep -qi musl; then platform="$platform-musl"; else platform="$platform-gnu"; fi
fi
target_file="$crate/dris-native.$platform.node"

if ! command -v cargo >/dev/null 2>&1; then
  if [ "$soft" = 1 ]; then
    echo "build-native: cargo not found; the native hashing backend is not built (wasm and js remain)" >&2
    exit 0
  fi
  echo "build-native: cargo not found; install a Rust toolchain to build the native backend" >&2
  exit 1
fi

key="$(
  {
    echo "profile=$profile platform=$platform"
    rustc --version
    cd "$crate"
    find Cargo.toml Cargo.lock build.rs src -type f 2>/dev/null | LC_ALL=C sort | while read -r f; do
      echo "$f $(sha256sum "$f" | cut -d' ' -f1)"
    done
  } | sha256sum | cut -c1-24
)"
cache="${DRIS_TOOLS_DIR:-$HOME/.cache/dris-tools}/native/$key"

if [ -f "$cache/dris-native.node" ]; then
  cp "$cache/dris-native.node" "$target_file.tmp" && mv "$target_file.tmp" "$target_file"
  echo "build-native: $profile addon from cache ($key) -> ${target_file#"$root"/}"
  exit 0
fi

cargo_args=(build --manifest-path "$crate/Cargo.toml" --lib)
[ "$profile" = release ] && cargo_args+=(--release)
cargo "${cargo_args[@]}"

target_dir="${CARGO_TARGET_DIR:-$crate/target}"
case "$(uname -s)" in
  Darwin) built="$target_dir/$profile/libdris_native.dylib" ;;
  MINGW*|MSYS*|CYGWIN*) built="$target_dir/$profile/dris_native.dll" ;;
  *) built="$target_dir/$profile/libdris_native.so" ;;
esac

mkdir -p "$cache"
cp "$built" "$cache/dris-native.node.tmp" && mv "$cache/dris-native.node.tmp" "$cache/dris-native.node"
cp "$built" "$target_file.tmp" && mv "$target_file.tmp" "$target_file"
echo "build-native: $profile addon built ($key) -> ${target_file#"$root"/}"
