import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { EmbeddedQueue } from '../../src/adapters/queue/embedded-queue.js';
import { SegmentLog } from '../../src/adapters/storage/segment-log.js';
import { queueCommand } from '../../src/cli/queue-command.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { setLogLevel } from '../../src/util/logger.js';
import { queued, sampleRecord } from '../harness/records.js';

/**
 * Damage anywhere but the torn tail of the last segment stops the open with storage_corrupt naming
 * the file and offset; `dris queue check` reports it (exit 1); `dris queue repair` keeps the intact
 * messages, quarantines the damaged bytes, records the lost seqs, and the log opens again with
 * its readers going on after them.
 */

setLogLevel('silent');

const HEADER = 16;

function tempData(t: Test): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-repair-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** 60 messages in groups of 3 over segments of ~300 bytes: a dozen segments or so. */
async function filledLog(logDir: string, count = 60): Promise<void> {
  const log = SegmentLog.open(logDir, { segmentBytes: 300, onFault: () => undefined });
  for (let i = 0; i < count; i += 3) await Promise.all([i, i + 1, i + 2].filter((k) => k < count).map((k) => log.append(Buffer.from(`message-${k + 1}-${'p'.repeat(20)}`))));
  await log.close();
}

function segments(logDir: string): string[] {
  return readdirSync(logDir)
    .filter((f) => f.endsWith('.seg'))
    .sort()
    .map((f) => path.join(logDir, f));
}

/** Byte offsets of the frames of a segment file. */
function frameOffsets(file: string): number[] {
  const buf = readFileSync(file);
  const out: number[] = [];
  for (let pos = 0; pos + HEADER <= buf.length; pos += HEADER + (buf.readUInt32LE(pos) & 0x7fffffff)) out.push(pos);
  return out;
}

async function readAll(t: Test, log: SegmentLog): Promise<number[]> {
  const seqs: number[] = [];
  for (let from = log.firstSeq; ; ) {
    const batch = await log.read(from, 7);
    if (batch.length === 0) return seqs;
    for (const e of batch) {
      t.equal(e.payload.toString(), `message-${e.seq}-${'p'.repeat(20)}`, `seq ${e.seq} reads its own payload`);
      seqs.push(e.seq);
    }
    from = (batch.at(-1)?.seq ?? from) + 1;
  }
}

function openError(logDir: string): DrisError | null {
  try {
    SegmentLog.open(logDir, { onFault: () => undefined });
    return null;
  } catch (err) {
    return err instanceof DrisError ? err : null;
  }
}

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await queueCommand(args, { out: (s) => (out += s), err: (s) => (err += s) }, {});
  return { code, out, err };
}

interface CheckJson {
  logs: { dir: string; problems: { kind: string; file: string; offset: number; lost: { from: number; to: number } | null }[]; tornTail: unknown }[];
}

function flip(buf: Buffer, at: number): void {
  buf.writeUInt8(buf.readUInt8(at) ^ 0xff, at);
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

t.test('a bad checksum in a middle segment: refused, reported, repaired, read around', async (t) => {
  const data = tempData(t);
  const logDir = path.join(data, 'queue', 'log');
  await filledLog(logDir);
  const segs = segments(logDir);
  t.ok(segs.length >= 4, `several segments (${segs.length})`);
  const victim = segs[1] as string;
  const next = segs[2] as string;
  const offsets = frameOffsets(victim);
  const at = offsets[1] as number;
  const bytes = readFileSync(victim);
  flip(bytes, at + HEADER + 2);
  writeFileSync(victim, bytes);
  const firstSeq = Number(path.basename(victim).slice(0, 16));
  const nextFirst = Number(path.basename(next).slice(0, 16));

  const err = openError(logDir);
  t.equal(err?.code, 'storage_corrupt');
  t.match(err?.message, victim, 'the error names the file');
  t.match(err?.message, `byte ${at}`, 'and the offset');
  t.match(err?.message, 'dris queue repair');

  const check = await cli(['check', '--data-dir', data, '--json']);
  t.equal(check.code, 1, 'check exits 1');
  const report = JSON.parse(check.out) as CheckJson;
  const problems = report.logs.flatMap((l) => l.problems);
  t.same(problems.map((p) => [p.kind, p.file, p.offset]), [['damaged', victim, at]]);
  t.same(problems[0]?.lost, { from: firstSeq + 1, to: nextFirst - 1 });
  const text = await cli(['check', '--data-dir', data]);
  t.match(text.out, `DAMAGED ${victim} at byte ${at}`);

  const repair = await cli(['repair', '--data-dir', data]);
  t.equal(repair.code, 0, 'repair exits 0 once nothing is left to repair');
  t.match(repair.err, `LOST: ${logDir}: seqs ${firstSeq + 1}..${nextFirst - 1}`, 'the lost range is reported');
  const quarantine = readdirSync(logDir).filter((f) => f.includes('.corrupt-at-'));
  t.equal(quarantine.length, 1, 'the damaged bytes are kept beside the segment');
  t.equal(statSync(path.join(logDir, quarantine[0] as string)).size, bytes.length - at, 'all of them');
  t.equal(statSync(victim).size, at, 'the segment keeps its intact frames');
  t.equal((await cli(['check', '--data-dir', data])).code, 0, 'check is clean afterwards');

  const log = SegmentLog.open(logDir, { onFault: () => undefined });
  const seqs = await readAll(t, log);
  const lost = new Set(range(firstSeq + 1, nextFirst - 1));
  t.same(
    seqs,
    range(1, 60).filter((s) => !lost.has(s)),
    'every other message reads, in order',
  );
  t.equal(await log.append(Buffer.from(`message-61-${'p'.repeat(20)}`)), 61);
  await log.close();
});

t.test('a missing middle segment (a seq gap) and a short middle segment are refused until repaired', async (t) => {
  for (const damage of ['missing', 'short'] as const) {
    const data = mkdtempSync(path.join(tmpdir(), 'dris-repair-'));
    const logDir = path.join(data, 'queue', 'log');
    await filledLog(logDir);
    const segs = segments(logDir);
    const victim = segs[2] as string;
    if (damage === 'missing') unlinkSync(victim);
    else truncateSync(victim, statSync(victim).size - 5);
    const err = openError(logDir);
    t.equal(err?.code, 'storage_corrupt', `${damage}: refused`);
    t.match(err?.message, damage === 'missing' ? (segs[3] as string) : victim, `${damage}: names the file`);
    t.equal((await cli(['check', '--data-dir', data])).code, 1, `${damage}: check exits 1`);
    t.equal((await cli(['repair', '--data-dir', data])).code, 0, `${damage}: repaired`);
    const log = SegmentLog.open(logDir, { onFault: () => undefined });
    const seqs = await readAll(t, log);
    t.ok(seqs.length > 40 && seqs.length < 60, `${damage}: the rest reads (${seqs.length})`);
    t.equal(seqs.at(-1), 60, `${damage}: up to the last message`);
    await log.close();
    rmSync(data, { recursive: true, force: true });
  }
});

t.test('the last segment: a torn tail is cut at open; damage followed by later groups is refused', async (t) => {
  const data = tempData(t);
  const logDir = path.join(data, 'queue', 'log');
  await filledLog(logDir);
  const last = segments(logDir).at(-1) as string;
  appendFileSync(last, Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]));
  const torn = await cli(['check', '--data-dir', data, '--json']);
  t.equal(torn.code, 0, 'a torn tail is not damage');
  t.ok((JSON.parse(torn.out) as CheckJson).logs[0]?.tornTail !== null, 'but it is reported');
  let log = SegmentLog.open(logDir, { onFault: () => undefined });
  t.equal(log.lastSeq, 60, 'the torn tail is cut, nothing else');
  await log.close();

  // Damage the first frame of the last segment; the later groups of that segment stay intact.
  const offsets = frameOffsets(last);
  t.ok(offsets.length >= 4, 'the last segment holds several groups');
  const bytes = readFileSync(last);
  flip(bytes, HEADER + 1);
  writeFileSync(last, bytes);
  const err = openError(logDir);
  t.equal(err?.code, 'storage_corrupt', 'damage before later groups is not a torn tail');
  t.match(err?.message, `${last} is damaged at byte 0`);
  t.equal((await cli(['check', '--data-dir', data])).code, 1);
  t.equal((await cli(['repair', '--data-dir', data])).code, 0);
  log = SegmentLog.open(logDir, { onFault: () => undefined });
  const next = await log.append(Buffer.from('after repair'));
  t.ok(next > 60, `no seq a reader may have seen is given again (${next})`);
  await log.close();
});

t.test('embedded queue consumers go on after a repaired gap, and their floor passes over it', async (t) => {
  const data = tempData(t);
  const qdir = path.join(data, 'queue');
  let q = EmbeddedQueue.open({ dir: qdir, consumers: ['indexer'], maxPendingPublishes: 1000 });
  for (let i = 0; i < 400; i++) await q.publish([queued(sampleRecord(i))]);
  await q.close();
  // The default segment size holds all of them: split the log by hand at seq 201.
  const logDir = path.join(qdir, 'log');
  const only = segments(logDir)[0] as string;
  const offsets = frameOffsets(only);
  const buf = readFileSync(only);
  writeFileSync(only, buf.subarray(0, offsets[200]));
  writeFileSync(path.join(logDir, '0000000000000201.seg'), buf.subarray(offsets[200]));
  // Damage seq 150.
  const damaged = readFileSync(only);
  flip(damaged, (offsets[149] as number) + HEADER + 3);
  writeFileSync(only, damaged);
  t.throws(() => EmbeddedQueue.open({ dir: qdir, consumers: ['indexer'], maxPendingPublishes: 1000 }), { code: 'storage_corrupt' });
  t.equal((await cli(['repair', '--data-dir', data])).code, 0);
  t.ok(existsSync(path.join(logDir, 'lost-ranges.json')));

  q = EmbeddedQueue.open({ dir: qdir, consumers: ['indexer'], maxPendingPublishes: 1000 });
  const seen: string[] = [];
  const sub = q.consume({ consumer: 'indexer', maxBatch: 50, maxInFlight: 100, ackWaitMs: 60_000 }, async (ds) => {
    for (const d of ds) {
      seen.push(...d.records.map((r) => r.ingestId));
      await d.ack();
    }
  });
  const deadline = Date.now() + 10_000;
  while (q.positions().consumers['indexer'] !== 400 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await sub.stop();
  t.equal(seen.length, 349, 'every message but the 51 lost ones is delivered');
  t.notOk(seen.includes('id-149') || seen.includes('id-199'), 'the lost ones are not');
  t.equal(q.positions().consumers['indexer'], 400, 'the ack floor passed over the lost range');
  await q.close();
});
