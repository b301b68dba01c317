import { execFileSync } from 'node:child_process';
import { hash as cryptoHash, randomBytes } from 'node:crypto';

/**
 * The hashing floor: SHA-256 of 1 KiB blocks on one core, from `openssl speed` (the machine's
 * best SHA-256, with SHA extensions where the CPU has them), else a node:crypto loop.
 */

export interface ShaFloor {
  readonly mbPerSec: number;
  readonly source: string;
}

export function shaFloor(seconds: number): ShaFloor {
  try {
    const out = execFileSync('openssl', ['speed', '-bytes', '1024', '-seconds', String(Math.max(1, Math.round(seconds))), 'sha256'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 30_000 + seconds * 1000,
    });
    const line = out.split('\n').find((l) => /^sha256\s/.test(l));
    const k = line === undefined ? NaN : Number(line.trim().split(/\s+/).pop()?.replace(/k$/, ''));
    if (Number.isFinite(k)) return { mbPerSec: Math.round(k / 100) / 10, source: 'openssl speed -bytes 1024 sha256' };
  } catch {
    // openssl absent: node:crypto below.
  }
  const buf = randomBytes(1024);
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < seconds * 1000) {
    for (let i = 0; i < 1000; i++) cryptoHash('sha256', buf, 'buffer');
    n += 1000;
  }
  const perSec = (n / (performance.now() - start)) * 1000;
  return { mbPerSec: Math.round((perSec * 1024) / 1e5) / 10, source: 'node:crypto hash() of 1 KiB in a loop' };
}
