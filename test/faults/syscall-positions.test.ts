import t from 'tap';
import { POSITION_WRITE_FAILED, prepareTemplate, runCase, straceUsable, type Case } from './helpers/syscall.js';

/**
 * Every file-system call of the consumers' position files failing once (tmp file, flush, rename,
 * directory flush), the service under strace (see helpers/syscall.ts). A position that could not
 * be written is only logged and written again later (a lost position only redelivers); ingestion
 * is untouched. After a restart without faults, every record answered 202 is listed once.
 */

const CASES: readonly Case[] = [
  { name: 'openat EIO', inject: ['openat:error=EIO:when=1'], expect: 'answers', files: 'positions', evidence: POSITION_WRITE_FAILED },
  { name: 'write EIO', inject: ['write:error=EIO:when=1'], expect: 'answers', files: 'positions', evidence: POSITION_WRITE_FAILED },
  { name: 'fdatasync EIO', inject: ['fdatasync:error=EIO:when=1'], expect: 'answers', files: 'positions', evidence: POSITION_WRITE_FAILED },
  { name: 'rename EIO', inject: ['rename,renameat,renameat2:error=EIO:when=1'], expect: 'answers', files: 'positions', evidence: POSITION_WRITE_FAILED },
  { name: 'fsync EIO (the directory after the rename)', inject: ['fsync:error=EIO:when=1'], expect: 'answers', files: 'positions', evidence: POSITION_WRITE_FAILED },
];

t.test('every file-system call of the consumer positions failing once', { skip: straceUsable() ? false : 'strace is missing or may not trace here (scripts/tools.sh strace)' }, async (t) => {
  const template = await prepareTemplate(t);
  for (const [i, c] of CASES.entries()) await runCase(t, c, template, 100 + i);
});
