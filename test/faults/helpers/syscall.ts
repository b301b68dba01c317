import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { eventually, startService, type ServiceHandle } from '../../harness/service.js';
import { awaitReconciled, isErrorBody, killTree, Ledger, type Answer } from './records.js';

/**
 * Runs of the service under `strace -f -e inject=<syscalls>:error=<errno>:when=N`, in the manner
 * of Trillian Tessera's fault tests, for test/faults/syscall-*.test.ts: `-P` keeps the injection
 * on the queue's own files (its segment, its directory, the consumers' position files). strace
 * counts calls per thread: `when=N` fails the Nth such call of each thread of the libuv pool.
 */

export type Expect = 'exits' | 'continues' | 'answers' | 'start-fails';

export interface Case {
  readonly name: string;
  readonly inject: readonly string[];
  readonly expect: Expect;
  /** Which files the injection applies to: the whole queue (default), or the consumers' positions only. */
  readonly files?: 'queue' | 'positions';
  /** A log line showing the fault was met, when no answer shows it. */
  readonly evidence?: RegExp;
}

export const POSITION_WRITE_FAILED = /writing a consumer position failed/;

/**
 * The embedded default, every role: the queue's producer (api) and its consumers (indexer, what
 * GET /api/v1/records lists, and the accumulator). A subset of the roles on the embedded queue is
 * refused at start (no other process could run the rest, see docs/operations.md).
 */
const ENV = { DRIS_RATE_LIMITS: 'standard=100000000', DRIS_LOG_LEVEL: 'info' };

/** strace is installed and may trace here (ptrace can be forbidden in a container). */
export function straceUsable(): boolean {
  try {
    execFileSync('strace', ['-f', '-qq', '-o', '/dev/null', 'true'], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/** The queue's own files: injections elsewhere (chDB, anvil, the runtime) are not this test's subject. */
function tracedPaths(dataDir: string, which: 'queue' | 'positions'): string[] {
  const q = path.join(dataDir, 'queue');
  const files = which === 'queue' ? [path.join(q, 'log'), path.join(q, 'log', '0000000000000001.seg'), path.join(q, 'consumers')] : [path.join(q, 'consumers')];
  // Exact paths: a file's own path, not its directory's, matches the calls on it.
  for (const c of ['indexer', 'accumulator']) files.push(path.join(q, 'consumers', `${c}.json`), path.join(q, 'consumers', `${c}.json.tmp`));
  return files;
}

function straceArgs(dataDir: string, c: Case): string[] {
  const inject = c.inject;
  const syscalls = inject.map((i) => i.split(':')[0]).join(',');
  return ['strace', '-f', '-qq', '--seccomp-bpf', '-o', '/dev/null', ...tracedPaths(dataDir, c.files ?? 'queue').flatMap((p) => ['-P', p]), '-e', `trace=${syscalls}`, ...inject.flatMap((i) => ['-e', `inject=${i}`])];
}

/** Rounds of concurrent single requests and a bulk one; stops early once the service is gone. */
async function load(ledger: Ledger, svc: ServiceHandle, key: string, gone: () => boolean): Promise<void> {
  for (let round = 0; round < 15 && !gone(); round++) {
    await Promise.all([...Array.from({ length: 6 }, () => ledger.single(svc, key)), ledger.bulk(svc, key, 10)]);
  }
}

function badAnswers(answers: readonly Answer[]): unknown[] {
  return answers
    .filter((a) => a.status !== 202)
    .filter((a) => a.status < 500 || !isErrorBody(a.body) || (a.status === 503 && a.retryAfter === null))
    .map((a) => [a.kind, a.status, a.retryAfter, a.body]);
}

/** One data directory set up without faults (keys, first segment), copied for each run. */
export async function prepareTemplate(t: Test): Promise<string> {
  const template = mkdtempSync(path.join(tmpdir(), 'dris-syscall-template-'));
  t.teardown(() => rmSync(template, { recursive: true, force: true }));
  const first = await startService({ dataDir: template, env: ENV });
  const warm = new Ledger('default', 'warm');
  for (let i = 0; i < 5; i++) await warm.single(first, first.bootstrapKey);
  await first.stop();
  t.equal(warm.acked.size, 5, 'template ready');
  return template;
}

/**
 * One run: the service under strace with the case's injection, clients ingesting; what it
 * answered and whether it stayed, stopped or refused to start; then a restart without faults and
 * the reconciliation of every record answered 202.
 */
export async function runCase(t: Test, c: Case, template: string, index: number): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'dris-syscall-'));
  cpSync(template, dataDir, { recursive: true });
  const ledger = new Ledger('default', `sys-${index}`);
  let svc: ServiceHandle | null = null;
  try {
    let started: ServiceHandle | null = null;
    try {
      started = await startService({ dataDir, env: ENV, wrap: straceArgs(dataDir, c) });
    } catch {
      // refused to start: checked below
    }
    if (started === null) {
      t.equal(c.expect, 'start-fails', `${c.name}: the service refused to start`);
    } else {
      const faulted = started;
      svc = faulted;
      t.not(c.expect, 'start-fails', `${c.name}: the service started`);
      let exit: { code: number | null } | null = null;
      void faulted.exited.then((e) => (exit = e));
      await load(ledger, faulted, faulted.bootstrapKey, () => exit !== null);
      const refusedAt = ledger.answers.findIndex((a) => a.status !== 202);
      if (c.evidence !== undefined) {
        // Positions are written a moment after the consumer acknowledges.
        const met = await eventually(async () => (faulted.logs.some((l) => c.evidence?.test(l) === true) ? true : undefined), 5_000, 100).catch(() => false);
        t.ok(met, `${c.name}: the fault was met (${c.evidence.source})`);
      }
      t.same(badAnswers(ledger.answers), [], `${c.name}: every refusal is a 5xx with the error body, 503 with Retry-After`);
      if (c.expect === 'exits') {
        const done = await Promise.race([faulted.exited, new Promise<null>((r) => setTimeout(() => r(null), 15_000))]);
        t.equal(done?.code, 74, `${c.name}: the process stopped by itself (exit 74) to recover from disk`);
        t.ok(
          ledger.answers.some((a) => isErrorBody(a.body) && a.body.error === 'storage_failed'),
          `${c.name}: requests met storage_failed before it did`,
        );
      } else {
        t.equal(exit, null, `${c.name}: the process is still up`);
        t.equal(ledger.unanswered, 0, `${c.name}: every request was answered`);
        if (c.expect === 'continues') {
          t.ok(refusedAt >= 0, `${c.name}: the fault was met (a request was refused)`);
          t.ok(
            ledger.answers.slice(refusedAt + 1).some((a) => a.status === 202),
            `${c.name}: ingestion went on after it`,
          );
        }
      }
      await killTree(faulted);
    }
    svc = await startService({ dataDir, env: ENV });
    const rec = await awaitReconciled(svc, svc.bootstrapKey, ledger, 60_000);
    t.same([rec.missing.length, rec.duplicated.length, rec.wrongHash.length], [0, 0, 0], `${c.name}: all ${ledger.acked.size} records answered 202 are listed once with their hash`);
    t.comment(`${c.name}: ${ledger.answers.length} answers, ${ledger.acked.size} records answered 202, ${ledger.answers.filter((a) => a.status !== 202).length} refused, ${ledger.unanswered} unanswered`);
  } finally {
    // SIGTERM: the service stops its anvil too.
    await svc?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

