import path from 'node:path';
import { parseArgs } from 'node:util';
import { ProcessLock } from '../adapters/process-lock.js';
import { checkLog, findLogs, repairLog, type LogReport, type RepairOutcome } from '../adapters/storage/segment-repair.js';
import { parseArgsRefusal } from './arg-errors.js';

export const QUEUE_USAGE = `usage:
  dris queue check  [--data-dir DIR] [--json]
      reports every segment log under the data directory (the queue, the admission store, the
      index journal): segments, frames, seq ranges, and any damage with its file and byte offset.
      Exits 1 when a log is damaged (the service refuses to start on it), else 0.
  dris queue repair [--data-dir DIR] [--json]
      with the service stopped: keeps every intact message, moves the damaged bytes to a
      quarantine file beside their segment (<segment>.corrupt-at-<offset>-<time>), and records
      the seqs they held in the log's lost-ranges.json, so the log opens again and its consumers
      go on after them. Nothing is deleted. Prints each lost range.
  --data-dir defaults to DRIS_DATA_DIR, else ./data.`;

interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

const stdio: Io = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };

/** `dris queue check|repair`; returns the exit code. */
export async function queueCommand(args: readonly string[], io: Io = stdio, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: [...args], allowPositionals: true, options: { 'data-dir': { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
  } catch (err) {
    const refusal = parseArgsRefusal(err);
    if (refusal === undefined) throw err;
    io.err(`dris: ${refusal}\n${QUEUE_USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    io.out(`${QUEUE_USAGE}\n`);
    return 0;
  }
  const sub = positionals[0];
  if (positionals.length !== 1 || (sub !== 'check' && sub !== 'repair')) {
    io.err(`${QUEUE_USAGE}\n`);
    return 2;
  }
  const dataDir = path.resolve(values['data-dir'] ?? (env['DRIS_DATA_DIR'] || './data'));
  const json = values.json === true;
  if (sub === 'check') {
    const reports = findLogs(dataDir).map((dir) => checkLog(dir));
    if (json) io.out(`${JSON.stringify({ dataDir, logs: reports }, null, 2)}\n`);
    else io.out(describeReports(dataDir, reports));
    return reports.some((r) => r.problems.length > 0) ? 1 : 0;
  }
  // Quarantined bytes are payloads: the service user's alone, as everything in the data directory.
  process.umask(0o077);
  // The service must not write while its files are cut.
  const lock = ProcessLock.acquire(path.join(dataDir, 'dris.lock'));
  try {
    const outcomes: RepairOutcome[] = [];
    for (const dir of findLogs(dataDir)) outcomes.push(await repairLog(dir));
    const after = findLogs(dataDir).map((dir) => checkLog(dir));
    for (const o of outcomes) {
      for (const r of o.lost) io.err(`LOST: ${o.dir}: seqs ${r.from}..${r.to} (damaged bytes of ${r.file} from byte ${r.offset}${r.quarantine === null ? '' : `, kept in ${r.quarantine}`})\n`);
    }
    if (json) io.out(`${JSON.stringify({ dataDir, repairs: outcomes, logs: after }, null, 2)}\n`);
    else io.out(describeRepairs(outcomes) + describeReports(dataDir, after));
    return after.some((r) => r.problems.length > 0) ? 1 : 0;
  } finally {
    lock.release();
  }
}

function describeReports(dataDir: string, reports: readonly LogReport[]): string {
  let text = '';
  for (const r of reports) {
    const frames = r.segments.reduce((n, s) => n + s.frames, 0);
    const bytes = r.segments.reduce((n, s) => n + s.fileSize, 0);
    const seqs = r.firstSeq === null ? 'no messages' : `seqs ${r.firstSeq}..${r.lastSeq ?? r.firstSeq}`;
    text += `${path.relative(dataDir, r.dir) || '.'}: ${r.segments.length} segment(s), ${frames} message(s), ${seqs}, ${bytes} bytes — ${r.problems.length === 0 ? 'ok' : 'DAMAGED'}\n`;
    for (const p of r.problems) {
      text += `  DAMAGED ${p.file} at byte ${p.offset}: ${p.detail}${p.lost === null ? '' : `; seqs ${p.lost.from}..${p.lost.to} cannot be read`}\n`;
    }
    if (r.tornTail !== null) text += `  torn tail: ${r.tornTail.file} from byte ${r.tornTail.offset} (${r.tornTail.bytes} bytes of an interrupted, never acknowledged write; cut at the next start)\n`;
    for (const l of r.lostRanges) text += `  lost (repaired ${l.repairedAt}): seqs ${l.from}..${l.to} of ${l.file}${l.quarantine === null ? '' : `, damaged bytes kept in ${l.quarantine}`}\n`;
  }
  const damaged = reports.filter((r) => r.problems.length > 0).length;
  text += `${reports.length} log(s) under ${dataDir}; ${damaged === 0 ? 'no damage found' : `${damaged} damaged: run \`dris queue repair\` with the service stopped`}\n`;
  return text;
}

function describeRepairs(outcomes: readonly RepairOutcome[]): string {
  let text = '';
  for (const o of outcomes) {
    for (const q of o.quarantined) text += `repaired ${q.file}: ${q.bytes} bytes from byte ${q.offset} moved to ${q.quarantine}\n`;
    for (const l of o.lost) text += `recorded lost seqs ${l.from}..${l.to} in ${o.dir}\n`;
    for (const p of o.unrepaired) text += `NOT REPAIRED ${p.file}: ${p.detail} (move the file aside by hand after inspecting it)\n`;
  }
  return text;
}
