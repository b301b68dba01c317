import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { InterfaceAbi } from 'ethers';
import { DrisError } from '../../errors/dris-error.js';

/**
 * The compiled anchor contract. `npm run build:contracts` (part of `npm run build`) writes it to
 * contracts/artifacts/DrisAnchor.json from contracts/DrisAnchor.sol; it is a build output, not a
 * committed file.
 */
export interface AnchorArtifact {
  readonly contractName: string;
  readonly abi: InterfaceAbi;
  readonly bytecode: string;
  readonly deployedBytecode: string;
  readonly compiler: string;
  readonly evmVersion: string;
  readonly sourceHash: string;
}

const RELATIVE = path.join('contracts', 'artifacts', 'DrisAnchor.json');

/** Finds the artifact above this module: it runs from src/ (tests through a loader) or dist*\/src/. */
export function defaultArtifactPath(): string | null {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 8; depth++) {
    const candidate = path.join(dir, RELATIVE);
    if (existsSync(candidate)) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return null;
}

const cache = new Map<string, AnchorArtifact>();

export function loadAnchorArtifact(file?: string): AnchorArtifact {
  const resolved = file ?? defaultArtifactPath();
  if (resolved === null) {
    throw new DrisError('config_invalid', `the anchor contract artifact ${RELATIVE} is missing; run npm run build:contracts`);
  }
  const cached = cache.get(resolved);
  if (cached !== undefined) return cached;
  let parsed: Partial<AnchorArtifact>;
  try {
    parsed = JSON.parse(readFileSync(resolved, 'utf8')) as Partial<AnchorArtifact>;
  } catch (err) {
    throw new DrisError('config_invalid', `cannot read the anchor contract artifact ${resolved}`, { cause: err });
  }
  if (!Array.isArray(parsed.abi) || typeof parsed.bytecode !== 'string' || !parsed.bytecode.startsWith('0x') || parsed.bytecode.length < 4) {
    throw new DrisError('config_invalid', `${resolved} is not a contract artifact; run npm run build:contracts`);
  }
  const artifact: AnchorArtifact = {
    contractName: parsed.contractName ?? 'DrisAnchor',
    abi: parsed.abi,
    bytecode: parsed.bytecode,
    deployedBytecode: parsed.deployedBytecode ?? '0x',
    compiler: parsed.compiler ?? 'unknown',
    evmVersion: parsed.evmVersion ?? 'unknown',
    sourceHash: parsed.sourceHash ?? '',
  };
  cache.set(resolved, artifact);
  return artifact;
}
