import { ContractFactory, getAddress, isAddress, type TransactionReceipt } from 'ethers';
import { DrisError } from '../../errors/dris-error.js';
import { translateChainError } from './chain-errors.js';
import { NonceConflict, type Fees } from './tx-sender.js';
import { gasWithMargin, openRuntime, type ChainConnectionOptions, type Runtime } from './chain-runtime.js';

/** Deployment of the DrisAnchor contract: by `dris chain deploy`, and by the embedded chain on first start. */

export interface Deployment {
  readonly address: string;
  readonly txHash: string;
  readonly blockNumber: number;
  readonly chainId: number;
  readonly deployer: string;
  readonly anchorer: string;
}

export interface DeployOptions extends ChainConnectionOptions {
  /** The anchorer the contract starts with; the deployer (who becomes owner) when unset. */
  readonly anchorerAddress?: string;
}

export async function deployWith(rt: Runtime, anchorer: string): Promise<Deployment> {
  const factory = new ContractFactory(rt.artifact.abi, rt.artifact.bytecode);
  const { data } = await factory.getDeployTransaction(anchorer);
  let gas: bigint;
  let nonce: number;
  let fees: Fees;
  try {
    [gas, nonce, fees] = await Promise.all([
      rt.provider.estimateGas({ from: rt.wallet.address, data }),
      rt.sender.nextNonceChecked(),
      rt.sender.currentFees(),
    ]);
  } catch (err) {
    throw translateChainError(err, 'preparing the contract deployment', rt.iface);
  }
  let receipt: TransactionReceipt;
  try {
    receipt = await rt.sender.send({ to: null, data, gasLimit: gasWithMargin(gas) }, nonce, fees);
  } catch (err) {
    if (err instanceof NonceConflict) throw new DrisError('dependency_unavailable', 'another sender used the deployer nonce; deploy again', { cause: err });
    throw err;
  }
  if (receipt.status !== 1 || receipt.contractAddress === null) {
    throw new DrisError('dependency_unavailable', 'the contract deployment reverted', { extra: { txHash: receipt.hash } });
  }
  const deployment: Deployment = {
    address: getAddress(receipt.contractAddress),
    txHash: receipt.hash,
    blockNumber: receipt.blockNumber,
    chainId: rt.chainId,
    deployer: rt.wallet.address,
    anchorer: getAddress(anchorer),
  };
  rt.log.info({ ...deployment, compiler: rt.artifact.compiler, gasUsed: String(receipt.gasUsed) }, 'anchor contract deployed');
  return deployment;
}

/**
 * Deploys DrisAnchor with the signer as owner and `anchorerAddress` (default: the signer) as
 * anchorer; resolves once the deployment has the configured confirmations. For `dris chain deploy`.
 */
export async function deployAnchorContract(options: DeployOptions): Promise<Deployment> {
  const rt = await openRuntime(options);
  try {
    const anchorer = options.anchorerAddress ?? rt.wallet.address;
    if (!isAddress(anchorer)) throw new DrisError('config_invalid', 'the anchorer is not an address');
    return await deployWith(rt, anchorer);
  } finally {
    rt.closed = true;
    rt.provider.destroy();
  }
}
