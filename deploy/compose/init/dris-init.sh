#!/bin/sh
# One-shot init job of deploy/compose, in the dris image: creates or upgrades the hot index schema,
# then makes sure the anchor contract exists and writes its address for the dris services
# (DRIS_CONTRACT_ENV_FILE, read by the image's entrypoint through DRIS_ENV_FILES).
#
# - DRIS_CONTRACT_ADDRESS given (a real chain, deployed beforehand with `dris chain deploy`): it is
#   written as it is, with DRIS_CONTRACT_DEPLOY_BLOCK.
# - otherwise, the first run deploys the contract on EVM_RPC_URL and writes what it printed; later
#   runs keep that file. Remove the dris-chain volume together with the chain's state, never alone.
set -eu

out="${DRIS_CONTRACT_ENV_FILE:?DRIS_CONTRACT_ENV_FILE is required}"

echo "dris-init: migrating the hot index schema" >&2
dris-entrypoint migrate

write_env() {
  case "$1" in
    0x[0-9a-fA-F]*) ;;
    *) echo "dris-init: not a contract address: $1" >&2; exit 1 ;;
  esac
  if [ "${#1}" -ne 42 ] || ! printf '%s' "$2" | grep -Eq '^[0-9]+$'; then
    echo "dris-init: refusing to write address '$1' and block '$2'" >&2
    exit 1
  fi
  tmp="$out.tmp.$$"
  printf 'DRIS_CONTRACT_ADDRESS=%s\nDRIS_CONTRACT_DEPLOY_BLOCK=%s\n' "$1" "$2" > "$tmp"
  chmod 0644 "$tmp"
  mv -f "$tmp" "$out"
  echo "dris-init: contract $1 (deployed in block $2) written to $out" >&2
}

if [ -n "${DRIS_CONTRACT_ADDRESS:-}" ]; then
  write_env "$DRIS_CONTRACT_ADDRESS" "${DRIS_CONTRACT_DEPLOY_BLOCK:-0}"
  exit 0
fi
if [ -s "$out" ]; then
  echo "dris-init: $out exists; the contract is deployed" >&2
  exit 0
fi
echo "dris-init: deploying the anchor contract on the configured chain" >&2
deployment="$(dris-entrypoint chain deploy)"
address="$(printf '%s' "$deployment" | node -e 'let s="";process.stdin.on("data",(d)=>{s+=d}).on("end",()=>{process.stdout.write(String(JSON.parse(s).contractAddress))})')"
block="$(printf '%s' "$deployment" | node -e 'let s="";process.stdin.on("data",(d)=>{s+=d}).on("end",()=>{process.stdout.write(String(JSON.parse(s).blockNumber))})')"
write_env "$address" "$block"
