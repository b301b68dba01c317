import type { ManifestObservation } from './assess.js';

/**
 * Reads a batch manifest (DECISIONS, "IPFS manifest") fetched from IPFS. The bytes are untrusted:
 * anything that is not a manifest answers null, and the caller reports ipfs_mismatch.
 */
export interface ParsedManifest extends ManifestObservation {
  readonly batchId: string;
  readonly batchSeq: number;
  readonly createdAt: string;
  readonly hashScheme: string;
  readonly merkleAlgorithm: string;
}

const HEX64 = /^[0-9a-f]{64}$/;

export function parseManifest(bytes: Uint8Array): ParsedManifest | null {
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const m = v as Record<string, unknown>;
  const leaves = m['leaves'];
  if (!Array.isArray(leaves) || !leaves.every((l): l is string => typeof l === 'string')) return null;
  const root = m['merkleRoot'];
  const treeSize = m['treeSize'];
  const batchSeq = m['batchSeq'];
  if (typeof root !== 'string' || !HEX64.test(root)) return null;
  if (typeof treeSize !== 'number' || !Number.isSafeInteger(treeSize) || typeof batchSeq !== 'number' || !Number.isSafeInteger(batchSeq)) return null;
  return {
    merkleRoot: root,
    treeSize,
    leaves,
    batchSeq,
    batchId: typeof m['batchId'] === 'string' ? m['batchId'] : '',
    createdAt: typeof m['createdAt'] === 'string' ? m['createdAt'] : '',
    hashScheme: typeof m['hashScheme'] === 'string' ? m['hashScheme'] : '',
    merkleAlgorithm: typeof m['merkleAlgorithm'] === 'string' ? m['merkleAlgorithm'] : '',
  };
}
