import type { AnchorEventView, BlockRef, ChainReader } from '../../src/domain/verification/ports.js';

/**
 * A unit test's chain whose contract has anchors but no events to search: the fakes of
 * verification's chain reads extend it with their own anchors and blocks.
 */
export abstract class EventlessChain implements ChainReader {
  readonly chainId = 31337;
  readonly contractAddress = '0x0000000000000000000000000000000000000001';
  abstract anchorOf(merkleRoot: string, at?: BlockRef): Promise<{ batchSeq: number; anchoredAtSec: number } | null>;
  abstract head(): Promise<BlockRef>;
  abstract blockAt(blockNumber: number): Promise<BlockRef | null>;
  abstract headBlock(): Promise<number>;
  eventBySeq(): Promise<AnchorEventView | null> {
    return Promise.resolve(null);
  }
  eventByRoot(): Promise<AnchorEventView | null> {
    return Promise.resolve(null);
  }
  eventByBatchId(): Promise<AnchorEventView | null> {
    return Promise.resolve(null);
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}
