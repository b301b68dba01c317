import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { loadNativeAddon } from '../../src/adapters/hashing/native-addon.js';
import { readAhead, readAheadMethod, readThrough } from '../../src/adapters/storage/page-cache.js';

/**
 * Files read ahead into the page cache: through the native addon's posix_fadvise where it is
 * built, else by reading them. Both resolve for a file that is there and fail with the file
 * system's code for one that is not.
 */

const root = mkdtempSync(path.join(tmpdir(), 'dris-page-cache-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
const file = path.join(root, 'data.bin');
writeFileSync(file, Buffer.alloc(3 * 1024 * 1024 + 17, 7));

function hasNativePrefetch(): boolean {
  try {
    return typeof loadNativeAddon().prefetchFile === 'function';
  } catch {
    return false;
  }
}

t.test('the method is the addon where it is built', async (t) => {
  t.equal(readAheadMethod(), hasNativePrefetch() && process.platform === 'linux' ? 'fadvise' : 'read');
});

t.test('a file that is there: the whole of it, a range, a range past its end, nothing', async (t) => {
  for (const read of [readAhead, readThrough]) {
    await read(file, 0, 3 * 1024 * 1024 + 17);
    await read(file, 1024 * 1024, 5000);
    await read(file, 3 * 1024 * 1024, 1 << 30);
    await read(file, 0, 0);
  }
  t.pass();
});

t.test('a file that is not there fails with ENOENT, whichever the method', async (t) => {
  for (const read of [readAhead, readThrough]) await t.rejects(read(path.join(root, 'gone.bin'), 0, 10), { code: 'ENOENT' });
});

t.test('the addon steps over a range and reports the error number of a failure', { skip: hasNativePrefetch() ? false : 'no native addon with prefetchFile here' }, async (t) => {
  const addon = loadNativeAddon();
  const prefetch = addon.prefetchFile?.bind(addon);
  if (prefetch === undefined) throw new Error('unreachable');
  t.equal(await prefetch(file, 0, 64 * 1024 * 1024), 0, 'a range larger than one step and than the file');
  t.equal(await prefetch(path.join(root, 'gone.bin'), 0, 1), 2, 'ENOENT');
  t.equal(await prefetch(file, -1, 10), 22, 'EINVAL for a negative offset');
});
