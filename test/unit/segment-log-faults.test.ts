import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { SegmentLog } from '../../src/adapters/storage/segment-log.js';
import { listSegments, scanSegment } from '../../src/adapters/storage/segment-format.js';
import { nodeLogFileSystem } from '../../src/adapters/storage/log-file-system.js';
import type { StorageFault } from '../../src/adapters/storage/storage-faults.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { setLogLevel } from '../../src/util/logger.js';
import { FaultyLogFs, seededRandom, type FaultOp } from '../harness/faulty-log-fs.js';
import { httpStatusOf } from '../../src/http/status.js';

/**
 * Every file-system call of the segment log failing once, at several points of a workload, in the
 * manner of Trillian Tessera's fault tests. After each run the process "crashes" (keeping the
 * page cache, or losing what was not flushed) and the log is opened again on the real file system:
 * - every append that was answered (resolved) is there, at its seq, with its bytes;
 * - once a flush failed, no append is answered any more;
 * - a write failure is recovered from: later appends are answered and survive;
 * - a seq that was answered is never given to another append.
 */

setLogLevel('silent');

/** tmpfs when there is one: thousands of fdatasyncs, none of which is what is tested. */
const base = (() => {
  try {
    mkdirSync('/dev/shm/dris-tests', { recursive: true });
    return '/dev/shm/dris-tests';
  } catch {
    return tmpdir();
  }
})();

const RECOVERABLE = new Set(['storage_full', 'dependency_unavailable']);

interface Run {
  readonly acked: Map<number, string>;
  /** Segments below this seq were released by the consumers (truncateBefore): gone by design. */
  released: number;
  readonly faults: StorageFault[];
  readonly violations: string[];
  /** A flush failed and the log was failed (storage_failed seen). */
  failed: boolean;
  /** Appends answered after the first recoverable failure. */
  answeredAfterRecoverable: number;
  recoverable: number;
}

async function workload(log: SegmentLog, rounds: number, run: Run): Promise<void> {
  for (let r = 0; r < rounds; r++) {
    const burst = Array.from({ length: 1 + (r % 4) }, (_, k) => `r${r}-k${k}-${'x'.repeat((r * 37 + k * 13) % 200)}`);
    const results = await Promise.allSettled(burst.map((p) => log.append(Buffer.from(p))));
    results.forEach((res, k) => {
      if (res.status === 'fulfilled') {
        if (run.failed) run.violations.push(`append answered (seq ${res.value}) after the log failed`);
        if (run.acked.has(res.value)) run.violations.push(`seq ${res.value} answered twice`);
        run.acked.set(res.value, burst[k] as string);
        if (run.recoverable > 0) run.answeredAfterRecoverable += 1;
        return;
      }
      const err: unknown = res.reason;
      if (!(err instanceof DrisError)) {
        run.violations.push(`rejected with a non-DrisError: ${String(err)}`);
        return;
      }
      if (err.code === 'storage_failed') run.failed = true;
      else if (RECOVERABLE.has(err.code)) run.recoverable += 1;
      else run.violations.push(`unexpected code ${err.code}`);
      if (httpStatusOf(err) === 503 && err.headers['Retry-After'] === undefined) run.violations.push(`503 ${err.code} without Retry-After`);
    });
    if (r % 6 === 5) {
      // A consumer caught up with half of what was answered: whole segments below may go.
      const seqs = [...run.acked.keys()].sort((a, b) => a - b);
      const upTo = seqs[Math.floor(seqs.length / 2)] ?? 0;
      log.truncateBefore(upTo);
      run.released = Math.max(run.released, upTo);
    }
    const reads = await log.read(log.firstSeq, 10_000).catch(() => null);
    if (reads !== null) {
      for (const e of reads) {
        const want = run.acked.get(e.seq);
        if (want !== undefined && want !== e.payload.toString()) run.violations.push(`read of seq ${e.seq} differs from what was answered`);
      }
    }
  }
}

async function verifyAfterRestart(t: Test, dir: string, run: Run, label: string): Promise<void> {
  const log = SegmentLog.open(dir, { onFault: () => undefined });
  const found = new Map<number, string>();
  for (let from = log.firstSeq; ; ) {
    const batch = await log.read(from, 1000);
    if (batch.length === 0) break;
    for (const e of batch) found.set(e.seq, e.payload.toString());
    from = (batch.at(-1)?.seq ?? from) + 1;
  }
  let lost = 0;
  for (const [seq, payload] of run.acked) {
    if (seq < run.released) continue;
    if (found.get(seq) !== payload) lost += 1;
  }
  t.equal(lost, 0, `${label}: every answered append is there after the restart`);
  const maxAcked = Math.max(0, ...run.acked.keys());
  const next = await log.append(Buffer.from('after-restart'));
  t.ok(next > maxAcked, `${label}: the next append gets a new seq (${next} > ${maxAcked})`);
  await log.close();
}

/** Segments whose frames do not run cleanly to the end of the file. */
function damagedSegments(dir: string): string[] {
  const out: string[] = [];
  for (const f of listSegments(nodeLogFileSystem.readdirSync(dir))) {
    const fd = nodeLogFileSystem.openSync(path.join(dir, f.name));
    try {
      const scan = scanSegment(nodeLogFileSystem, fd, f.firstSeq, f.legacy);
      if (scan.fault !== null) out.push(`${f.name}@${scan.fault.offset}`);
    } finally {
      nodeLogFileSystem.closeSync(fd);
    }
  }
  return out;
}

interface Case {
  readonly name: string;
  readonly arm: (fs: FaultyLogFs) => void;
  /** What the log must do about it. */
  readonly expect: 'recover' | 'fail' | 'either';
}

const cases: Case[] = [];
for (const n of [1, 2, 5, 9]) {
  cases.push({ name: `writev #${n} EIO`, arm: (fs) => fs.failAt('writev', n, 'EIO'), expect: 'recover' });
  cases.push({ name: `writev #${n} ENOSPC`, arm: (fs) => fs.failAt('writev', n, 'ENOSPC'), expect: 'recover' });
  cases.push({ name: `fdatasync #${n}`, arm: (fs) => fs.failAt('fdatasync', n), expect: 'fail' });
  cases.push({ name: `writev #${n} then its cut-back`, arm: (fs) => (fs.failAt('writev', n), fs.failAt('ftruncate', 1)), expect: 'fail' });
  cases.push({ name: `fsyncDir #${n}`, arm: (fs) => fs.failAt('fsyncDir', n), expect: 'fail' });
}
for (const n of [1, 2, 5]) {
  cases.push({ name: `create #${n}`, arm: (fs) => fs.failAt('create', n, n % 2 === 0 ? 'ENOSPC' : 'EIO'), expect: 'recover' });
  cases.push({ name: `close #${n}`, arm: (fs) => fs.failAt('close', n), expect: 'recover' });
}
for (const n of [1, 2]) cases.push({ name: `unlink #${n}`, arm: (fs) => fs.failAt('unlinkSync', n), expect: 'either' });

for (const crash of ['process', 'power'] as const) {
  t.test(`each call failing once, then a ${crash} crash`, async (t) => {
    let seed = 1;
    for (const c of cases) {
      const dir = mkdtempSync(path.join(base, 'dris-seglog-fault-'));
      const random = seededRandom(seed++);
      const fs = new FaultyLogFs(path.join(dir, '.trash'), random);
      const run: Run = { acked: new Map(), released: 0, faults: [], violations: [], failed: false, answeredAfterRecoverable: 0, recoverable: 0 };
      const log = SegmentLog.open(path.join(dir, 'log'), { fs, segmentBytes: 700, onFault: (f) => run.faults.push(f) });
      await workload(log, 4, run);
      c.arm(fs);
      await workload(log, 24, run);
      const label = `${c.name} (${crash})`;
      t.same(run.violations, [], `${label}: no violation`);
      t.ok(fs.injected.length > 0, `${label}: the fault was met`);
      if (c.expect === 'fail') {
        t.ok(run.failed && log.failed?.code === 'storage_failed', `${label}: the log failed`);
        t.ok(run.faults.some((f) => f.kind === 'fatal'), `${label}: a fatal fault was reported`);
      } else if (c.expect === 'recover') {
        t.equal(log.failed, null, `${label}: the log goes on`);
        if (run.recoverable > 0) t.ok(run.answeredAfterRecoverable > 0, `${label}: appends after the failure are answered`);
      }
      if (fs.injected.some((f) => f.code === 'ENOSPC')) t.ok(run.faults.some((f) => f.kind === 'full'), `${label}: ENOSPC is reported as full`);
      fs.crash(crash);
      if (crash === 'process' && c.expect !== 'fail') t.same(damagedSegments(path.join(dir, 'log')), [], `${label}: no rejected byte is left in a segment`);
      await verifyAfterRestart(t, path.join(dir, 'log'), run, label);
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

t.test('faults while opening: the open fails or succeeds whole, and a clean open finds everything', async (t) => {
  const ops: FaultOp[] = ['readdirSync', 'openSync', 'sizeSync', 'readSync', 'ftruncateSync', 'fdatasyncSync', 'closeSync', 'mkdirSync'];
  let seed = 100;
  for (const op of ops) {
    for (const n of [1, 2]) {
      const dir = mkdtempSync(path.join(base, 'dris-seglog-open-'));
      const random = seededRandom(seed++);
      const fs = new FaultyLogFs(path.join(dir, '.trash'), random);
      const run: Run = { acked: new Map(), released: 0, faults: [], violations: [], failed: false, answeredAfterRecoverable: 0, recoverable: 0 };
      const log = SegmentLog.open(path.join(dir, 'log'), { fs, segmentBytes: 700, onFault: () => undefined });
      await workload(log, 10, run);
      // A torn tail, so that the open has something to cut.
      fs.crash('power');
      await log.close().catch(() => undefined);
      const faulty = new FaultyLogFs(path.join(dir, '.trash2'), random);
      faulty.failAt(op, n);
      let reopened: SegmentLog | null = null;
      try {
        reopened = SegmentLog.open(path.join(dir, 'log'), { fs: faulty, onFault: () => undefined });
      } catch {
        // refused: nothing changed that matters, checked below
      }
      if (reopened !== null) await reopened.close();
      await verifyAfterRestart(t, path.join(dir, 'log'), run, `open with ${op} #${n} failing`);
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

t.test('a failed read rejects that read only', async (t) => {
  const dir = mkdtempSync(path.join(base, 'dris-seglog-read-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const first = SegmentLog.open(dir, { onFault: () => undefined });
  await Promise.all(Array.from({ length: 20 }, (_, i) => first.append(Buffer.from(`m${i}`))));
  await first.close();
  const fs = new FaultyLogFs(path.join(dir, '.trash'));
  const log = SegmentLog.open(dir, { fs, onFault: () => undefined });
  fs.failAt('readAt', 1);
  await t.rejects(log.read(1, 100), 'the read met the failure');
  const entries = await log.read(1, 100);
  t.same(
    entries.map((e) => e.payload.toString()),
    Array.from({ length: 20 }, (_, i) => `m${i}`),
  );
  t.equal(await log.append(Buffer.from('m20')), 21);
  await log.close();
});

t.test('a failed write leaves no byte of its group behind: the next group follows the last durable one', async (t) => {
  const dir = mkdtempSync(path.join(base, 'dris-seglog-cut-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // The failing write keeps 90 % of its bytes, as a disk that fills up mid-write does.
  const fs = new FaultyLogFs(path.join(dir, '.trash'), () => 0.9);
  const faults: StorageFault[] = [];
  const log = SegmentLog.open(path.join(dir, 'log'), { fs, onFault: (f) => faults.push(f) });
  t.equal(await log.append(Buffer.from('first')), 1);
  fs.failAt('writev', 1, 'ENOSPC');
  const big = Array.from({ length: 8 }, (_, i) => log.append(Buffer.alloc(1000, i)));
  const rejected = await Promise.allSettled(big);
  t.ok(
    rejected.every((r) => r.status === 'rejected' && r.reason instanceof DrisError && r.reason.code === 'storage_full'),
    'the whole group is refused with storage_full',
  );
  t.same(
    faults.map((f) => f.kind),
    ['full'],
  );
  t.equal(await log.append(Buffer.from('second')), 2, 'the next append takes the seq the refused group did not get');
  fs.crash('process');
  t.same(damagedSegments(path.join(dir, 'log')), []);
  const size = statSync(path.join(dir, 'log', '0000000000000001.seg')).size;
  t.equal(size, 2 * 16 + 'first'.length + 'second'.length, 'the file holds the two answered frames and nothing else');
  const reopened = SegmentLog.open(path.join(dir, 'log'), { onFault: () => undefined });
  t.same(
    (await reopened.read(1, 10)).map((e) => e.payload.toString()),
    ['first', 'second'],
  );
  await reopened.close();
});
