import { execFile } from 'node:child_process';
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { createClient } from '@hey-api/openapi-ts';
import t from 'tap';
import { repoRoot, request, startService, type ServiceHandle } from '../harness/service.js';

/**
 * The document as a tenant's developer uses it: a TypeScript client generated from the checked-in
 * docs/openapi.json by @hey-api/openapi-ts (fetch client, zod validators on requests and
 * responses) compiles under `tsc --strict` with the program test/client-program/tenant-flow.ts,
 * which then runs a tenant's whole flow against a real embedded service (ingestion, bulk, query,
 * anchoring, every verification mode, snapshots, batch, lifecycle, timeline, receipt, retry,
 * audit, retrieval controls, key and policy administration). Every answer must pass the
 * generated validators. The service also serves exactly the checked-in document.
 */

const run = promisify(execFile);
const work = path.join(repoRoot, 'dist', 'generated-client');
const docFile = path.join(repoRoot, 'docs', 'openapi.json');

let svc: ServiceHandle;

t.before(async () => {
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  await createClient({
    input: docFile,
    output: { path: path.join(work, 'client') },
    logs: { level: 'silent' },
    plugins: ['@hey-api/client-fetch', 'zod', { name: '@hey-api/sdk', validator: true }],
  });
  await copyFile(path.join(repoRoot, 'test', 'client-program', 'tenant-flow.ts'), path.join(work, 'tenant-flow.ts'));
  const tsconfig = {
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      lib: ['ES2023', 'DOM'],
      types: ['node'],
      strict: true,
      noUncheckedIndexedAccess: true,
      outDir: 'out',
      rootDir: '.',
      skipLibCheck: true,
    },
    include: ['tenant-flow.ts', 'client/**/*.ts'],
  };
  await writeFile(path.join(work, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  svc = await startService({ env: { DRIS_BATCH_MAX_WAIT_MS: '300' } });
});

t.teardown(async () => {
  await svc?.dispose();
});

t.test('the service serves the checked-in document', async (t) => {
  const served = await request(svc, 'GET', '/swagger/openapi.json');
  t.equal(served.status, 200);
  t.same(served.body, JSON.parse(await readFile(docFile, 'utf8')), 'docs/openapi.json is stale: run `npm run openapi`');
});

t.test('the generated client compiles under tsc --strict', async (t) => {
  const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
  const out = await run(process.execPath, [tsc, '-p', path.join(work, 'tsconfig.json')], { timeout: 240_000 }).then(
    () => '',
    (err: { stdout?: string; stderr?: string }) => `${err.stdout ?? ''}${err.stderr ?? ''}`,
  );
  t.equal(out, '', 'no compiler errors');
});

t.test("a tenant's whole flow through the generated client passes its response validators", async (t) => {
  const result = await run(process.execPath, [path.join(work, 'out', 'tenant-flow.js')], {
    timeout: 180_000,
    env: { PATH: process.env['PATH'] ?? '', DRIS_URL: svc.url, DRIS_ADMIN_URL: svc.adminUrl, DRIS_ADMIN_TOKEN: svc.adminToken },
  }).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? 1, stdout: `${err.stdout ?? ''}${err.stderr ?? ''}` }),
  );
  const line = result.stdout.trim().split('\n').at(-1) ?? '{}';
  let report: { steps?: string[]; failures?: string[] } = {};
  try {
    report = JSON.parse(line) as typeof report;
  } catch {
    t.fail(`the program printed no report: ${result.stdout}`);
  }
  t.same(report.failures, [], 'no step failed');
  t.equal(result.code, 0, 'exit code');
  for (const step of [
    'CreateApiKey',
    'IngestRecord (and its idempotent retry)',
    'BulkIngestRecords, form A',
    'BulkIngestRecords, form B',
    'QueryRecords',
    'QueryRecords: every record Anchored',
    'ListSnapshots: every snapshot Anchored',
    'ListSnapshots by status',
    'VerifyRecord, stored',
    'VerifyRecord, with the payload',
    'VerifyRecord, batchId mode',
    'VerifyPayload, payloadHash',
    'VerifyPayload, recordHash',
    'VerifySnapshot',
    'GetVerificationHistory',
    'GetSnapshot',
    'GetSnapshotLifecycle',
    'GetBatch',
    'GetRecordTimeline',
    'GetRecordReceipt',
    'GetIpfsContent',
    'RetrySnapshot (no body): 409 for an Anchored snapshot',
    'CheckRetrievalControls',
    'GetAuditHistory, record.ingest',
    'PutRetrievalPolicy',
    'RevokeApiKey (no body)',
  ]) {
    t.ok(report.steps?.includes(step), step);
  }
});
