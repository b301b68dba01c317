import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Contract, JsonRpcProvider, Network, Wallet } from 'ethers';
import t from 'tap';
import { ANVIL_DEV_PRIVATE_KEYS } from '../../src/adapters/chain/anvil-node.js';
import type { AnchorArtifact } from '../../src/adapters/chain/contract-artifact.js';
import { ensureContractArtifact, startAnvil } from '../harness/anvil.js';
import { cliPath } from '../harness/service.js';

/** `dris chain deploy` against a real anvil: the contract it prints is there, owned and staffed as asked. */

const artifact = JSON.parse(readFileSync(ensureContractArtifact(), 'utf8')) as AnchorArtifact;

interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function runCli(args: readonly string[], env: Record<string, string>): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [cliPath, ...args],
      { env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', DRIS_LOG_LEVEL: 'silent', ...env }, timeout: 120_000 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

void t.test('deploys the anchor contract with the signer as owner and the given anchorer', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const [ownerKey, anchorerKey] = ANVIL_DEV_PRIVATE_KEYS;
  const owner = new Wallet(ownerKey);
  const anchorer = new Wallet(anchorerKey);
  const env = { EVM_RPC_URL: anvil.rpcUrl, DRIS_CHAIN_ID: String(anvil.chainId), DRIS_ANCHORER_KEY: ownerKey };

  const run = await runCli(['chain', 'deploy', '--anchorer', anchorer.address], env);
  t.equal(run.code, 0, run.stderr);
  const d = JSON.parse(run.stdout) as { contractAddress: string; chainId: number; txHash: string; blockNumber: number; owner: string; anchorer: string };
  t.equal(d.chainId, anvil.chainId);
  t.match(d.txHash, /^0x[0-9a-f]{64}$/);
  t.equal(d.owner, owner.address);
  t.equal(d.anchorer, anchorer.address);

  const network = Network.from(anvil.chainId);
  const provider = new JsonRpcProvider(anvil.rpcUrl, network, { staticNetwork: network });
  t.teardown(() => provider.destroy());
  t.not(await provider.getCode(d.contractAddress), '0x', 'code at the printed address');
  const contract = new Contract(d.contractAddress, artifact.abi, provider);
  t.equal(await contract.getFunction('owner')(), owner.address);
  t.equal(await contract.getFunction('anchorer')(), anchorer.address);
  t.equal(await contract.getFunction('lastSequence')(), 0n);
  const receipt = await provider.getTransactionReceipt(d.txHash);
  t.equal(receipt?.blockNumber, d.blockNumber);

  // Without --anchorer the signer anchors.
  const again = await runCli(['chain', 'deploy'], env);
  t.equal(again.code, 0, again.stderr);
  t.equal((JSON.parse(again.stdout) as { anchorer: string }).anchorer, owner.address);

  // A node on another chain than configured is refused before anything is sent.
  const wrongChain = await runCli(['chain', 'deploy'], { ...env, DRIS_CHAIN_ID: String(anvil.chainId + 1) });
  t.equal(wrongChain.code, 1);
  t.equal(wrongChain.stdout, '');
});

void t.test('refuses without an external chain, and answers bad usage with the usage', async (t) => {
  const noRpc = await runCli(['chain', 'deploy'], {});
  t.equal(noRpc.code, 1);
  t.match(noRpc.stderr, /config_invalid/);
  t.equal((await runCli(['chain', 'launch'], {})).code, 2);
  t.equal((await runCli(['chain', 'deploy', '--bogus'], {})).code, 2);
  const help = await runCli(['chain', '--help'], {});
  t.equal(help.code, 0);
  t.match(help.stdout, /chain deploy/);
});
