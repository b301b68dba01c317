import fs from 'node:fs/promises';
import path from 'node:path';
import { FILE_MODE, fsyncDir } from './log-file-system.js';

/**
 * Replaces `file` with `data` so that a crash leaves either the old or the new content, never a
 * torn or empty file: written to a temporary file (0600), flushed, renamed over `file`, and the
 * directory flushed so the rename itself survives.
 */
export async function writeFileDurably(file: string, data: string | Buffer): Promise<void> {
  const tmp = `${file}.tmp`;
  const handle = await fs.open(tmp, 'w', FILE_MODE);
  try {
    await handle.writeFile(data);
    await handle.datasync();
  } finally {
    await handle.close();
  }
  await fs.rename(tmp, file);
  await fsyncDir(path.dirname(file));
}
