import { execFile } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { cliPath, startService, type ServiceHandle } from '../harness/service.js';
import { awaitReconciled, Ledger } from './helpers/records.js';

/**
 * Start-up on a queue whose middle segment is damaged: refused with an error naming the file and
 * the offset; `dris queue check` reports it (exit 1); `dris queue repair` quarantines the damaged
 * bytes and records the lost seqs; the service then starts, every record it had answered is
 * listed, and new ones are accepted. Also: the data directory is 0700 and everything dris
 * created in it is the service user's alone.
 */

/** The embedded default (every role): a subset of the roles on the embedded queue is refused at start. */
const ENV = { DRIS_RATE_LIMITS: 'standard=100000000', DRIS_LOG_LEVEL: 'info' };
const HEADER = 16;

function dris(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cliPath, ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

function frameOffsets(buf: Buffer): number[] {
  const out: number[] = [];
  for (let pos = 0; pos + HEADER <= buf.length; pos += HEADER + (buf.readUInt32LE(pos) & 0x7fffffff)) out.push(pos);
  return out;
}

/** Files and directories under `dir` that others than the owner may use. */
function openToOthers(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, depth: number): void => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const name of names) {
      const p = path.join(d, name);
      let st;
      try {
        st = lstatSync(p);
      } catch (err) {
        // The engine's temporary parts come and go while the service runs.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      if (st.isSymbolicLink()) continue;
      if ((st.mode & 0o077) !== 0) out.push(`${path.relative(dir, p)} ${(st.mode & 0o777).toString(8)}`);
      if (st.isDirectory() && depth < 12) walk(p, depth + 1);
    }
  };
  walk(dir, 0);
  return out;
}

t.test('a damaged middle segment stops start-up until check and repair', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'dris-corrupt-'));
  let svc: ServiceHandle | null = null;
  t.teardown(async () => {
    await svc?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  svc = await startService({ dataDir, env: ENV });
  const key = svc.bootstrapKey;
  const ledger = new Ledger('default', 'corrupt');
  for (let i = 0; i < 60; i++) await ledger.single(svc, key);
  t.equal(ledger.acked.size, 60);
  const first = await awaitReconciled(svc, key, ledger, 30_000);
  t.same(first.missing, [], 'indexed before the damage');

  t.equal(statSync(dataDir).mode & 0o777, 0o700, 'the data directory is 0700');
  t.same(openToOthers(dataDir), [], 'no file or directory under it is open to group or others');
  await svc.stop();

  // Two segments (split by hand at seq 31), the first of them damaged at seq 11.
  const logDir = path.join(dataDir, 'queue', 'log');
  const seg = path.join(logDir, '0000000000000001.seg');
  const buf = readFileSync(seg);
  const offsets = frameOffsets(buf);
  t.ok(offsets.length >= 60, `one segment of ${offsets.length} frames`);
  writeFileSync(path.join(logDir, '0000000000000031.seg'), buf.subarray(offsets[30]), { mode: 0o600 });
  const middle = Buffer.from(buf.subarray(0, offsets[30]));
  const at = offsets[10] as number;
  middle.writeUInt8(middle.readUInt8(at + HEADER + 5) ^ 0xff, at + HEADER + 5);
  writeFileSync(seg, middle);

  let refused: Error | null = null;
  try {
    svc = await startService({ dataDir, env: ENV });
  } catch (err) {
    refused = err as Error;
  }
  t.ok(refused !== null, 'start-up is refused');
  t.match(refused?.message, 'storage_corrupt', 'with storage_corrupt');
  t.match(refused?.message, `${seg} is damaged at byte ${at}`, 'naming the file and the offset');
  t.match(refused?.message, 'dris queue check', 'and the command to inspect it');

  const check = await dris(['queue', 'check', '--data-dir', dataDir]);
  t.equal(check.code, 1, 'dris queue check exits 1');
  t.match(check.stdout, `DAMAGED ${seg} at byte ${at}`, 'and reports the file and offset');
  t.match(check.stdout, 'seqs 11..30 cannot be read');

  const repair = await dris(['queue', 'repair', '--data-dir', dataDir]);
  t.equal(repair.code, 0, 'dris queue repair exits 0');
  t.match(repair.stderr, /LOST: .*seqs 11\.\.30/, 'reporting the lost range');
  t.ok(
    readdirSync(logDir).some((f) => f.startsWith('0000000000000001.seg.corrupt-at-')),
    'the damaged bytes are kept beside the segment',
  );
  const after = await dris(['queue', 'check', '--data-dir', dataDir]);
  t.equal(after.code, 0, 'check is clean after the repair');
  t.match(after.stdout, 'lost (repaired');

  svc = await startService({ dataDir, env: ENV });
  for (let i = 0; i < 20; i++) await ledger.single(svc, key);
  t.equal(ledger.acked.size, 80, 'new records are accepted after the repair');
  const rec = await awaitReconciled(svc, key, ledger, 30_000);
  t.same([rec.missing, rec.duplicated, rec.wrongHash], [[], [], []], 'every record answered 202 is listed once with its hash');
  t.same(openToOthers(dataDir), [], 'what the repair and the restart created is the owner\'s alone too');
});
