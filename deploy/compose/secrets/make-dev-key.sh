#!/bin/sh
# Development only: writes anvil's first test account key (published by Foundry, funded on every
# fresh anvil chain) as the anchorer key of deploy/compose. Never use it on a real chain.
set -eu
dir="$(cd "$(dirname "$0")" && pwd)"
chmod 0700 "$dir"
umask 022
printf '%s\n' 0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80 > "$dir/anchorer-key.tmp"
chmod 0444 "$dir/anchorer-key.tmp"
mv -f "$dir/anchorer-key.tmp" "$dir/anchorer-key"
echo "wrote $dir/anchorer-key (anvil test key #0: development only)"
