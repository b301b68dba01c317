import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { startService } from '../harness/service.js';

/**
 * The harness's service start: one that fails (a refused configuration, as many tests make on
 * purpose) leaves no data directory of the harness's making behind, and keeps one the caller gave.
 */

/** Runs `work` with the temp directory (os.tmpdir(), read at each call) pointed at a fresh one. */
async function inOwnTmp<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(tmpdir(), 'dris-harness-tmp-'));
  const before = process.env['TMPDIR'];
  process.env['TMPDIR'] = dir;
  try {
    return await work(dir);
  } finally {
    if (before === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = before;
    await rm(dir, { recursive: true, force: true });
  }
}

const REFUSED = { DRIS_ADMIN_TOKEN: 'too-short-admin-token' };

void t.test('a failed start removes the data directory the harness made', async (t) => {
  await inOwnTmp(async (dir) => {
    const failure = await startService({ env: REFUSED }).then(
      async (s) => {
        await s.dispose();
        return null;
      },
      (err: unknown) => String(err),
    );
    t.ok(failure !== null, 'the service did not start');
    t.strictSame(await readdir(dir), [], 'nothing left in the temp directory');
  });
});

void t.test("a failed start keeps the caller's data directory", async (t) => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'dris-harness-own-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const failure = await startService({ env: REFUSED, dataDir }).then(
    async (s) => {
      await s.dispose();
      return null;
    },
    (err: unknown) => String(err),
  );
  t.ok(failure !== null, 'the service did not start');
  t.ok((await readdir(path.dirname(dataDir))).includes(path.basename(dataDir)), 'the directory is still there');
});
