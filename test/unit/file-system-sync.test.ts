import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { fileSystemSyncMethod, syncFileSystems, syncThrough, type NativeSync } from '../../src/adapters/clickhouse/file-system-sync.js';
import { findNativeAddon } from '../../src/adapters/hashing/native-addon.js';
import { DrisError } from '../../src/errors/dris-error.js';

const dir = mkdtempSync(path.join(tmpdir(), 'dris-fs-sync-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const codeOf = (err: unknown): string | undefined => (err instanceof DrisError ? err.code : undefined);

void t.test('where the addon is built, file systems are flushed by syncfs, without a child process', async (t) => {
  t.equal(fileSystemSyncMethod(), findNativeAddon() === undefined ? 'sync -f' : 'syncfs');
  await t.resolves(syncFileSystems([dir, tmpdir()]));
  await t.rejects(syncFileSystems([path.join(dir, 'missing')]), 'a path that does not exist fails the flush');
});

void t.test('a flush past its deadline fails, and none is started beside it until it returns', async (t) => {
  let release: (() => void) | undefined;
  const hung: NativeSync = () => new Promise<void>((r) => (release = r));
  const calls: string[] = [];
  const quick: NativeSync = (p) => {
    calls.push(p);
    return Promise.resolve();
  };
  const late = await syncThrough(hung, ['/a'], 30).catch((e: unknown) => e);
  t.equal(codeOf(late), 'timeout');
  const refused = await syncThrough(quick, ['/b'], 30).catch((e: unknown) => e);
  t.equal(codeOf(refused), 'dependency_unavailable', 'refused while the first one holds a thread');
  t.same(calls, [], 'and not started');
  release?.();
  await new Promise((r) => setImmediate(r));
  await t.resolves(syncThrough(quick, ['/b', '/c'], 30), 'started again once it returned');
  t.same(calls, ['/b', '/c']);
});

void t.test('a failed flush rejects with its cause', async (t) => {
  const cause = new Error('EIO');
  const failing: NativeSync = () => Promise.reject(cause);
  t.equal(await syncThrough(failing, ['/a'], 1000).catch((e: unknown) => e), cause);
  await t.resolves(syncThrough(() => Promise.resolve(), ['/a'], 1000), 'nothing held after a failure');
});
