import { parseArgs } from 'node:util';
import { loadConfig } from '../config/config.js';
import { parseArgsRefusal } from './arg-errors.js';

export const CHAIN_USAGE = `usage:
  dris chain deploy [--anchorer ADDRESS]
      deploys the DrisAnchor contract on the external chain of EVM_RPC_URL (DRIS_CHAIN_ID, default
      31337), signed with DRIS_ANCHORER_KEY or DRIS_ANCHORER_KEYSTORE (+ _PASSWORD), which becomes
      the contract's owner. The anchorer is --anchorer, else the signer. Waits for DRIS_CONFIRMATIONS
      and prints the deployment as JSON; set DRIS_CONTRACT_ADDRESS to its contractAddress and
      DRIS_CONTRACT_DEPLOY_BLOCK to its blockNumber.`;

/**
 * `dris chain deploy`: the contract for an external chain, with the service's own chain settings
 * (the embedded chain deploys its contract itself on first start). Returns the exit code.
 */
export async function chainCommand(args: readonly string[], out: (text: string) => void = (t) => process.stdout.write(t)): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: [...args], allowPositionals: true, options: { anchorer: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  } catch (err) {
    const refusal = parseArgsRefusal(err);
    if (refusal !== undefined) {
      process.stderr.write(`dris: ${refusal}\n${CHAIN_USAGE}\n`);
      return 2;
    }
    throw err;
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    out(`${CHAIN_USAGE}\n`);
    return 0;
  }
  if (positionals.length !== 1 || positionals[0] !== 'deploy') {
    process.stderr.write(`${CHAIN_USAGE}\n`);
    return 2;
  }
  const { deployContract } = await import('../composition/tools.js');
  const d = await deployContract(loadConfig(), values.anchorer);
  out(`${JSON.stringify(d, null, 2)}\n`);
  return 0;
}
