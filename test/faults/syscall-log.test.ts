import t from 'tap';
import { prepareTemplate, runCase, straceUsable, type Case } from './helpers/syscall.js';

/**
 * Every file-system call of the queue's log failing once, the service under strace (see
 * helpers/syscall.ts). Every answer is a 202 or a 5xx with the error body (503s with
 * Retry-After); a failed write is refused and ingestion goes on; a failed flush or a failed
 * cut-back stops the process (exit 74); a start-up that cannot open its segment fails. After a
 * restart without faults, every record answered 202 is listed once with its hash.
 */

const WRITES = 'pwritev,pwritev2,pwrite64,writev';

const CASES: readonly Case[] = [
  { name: 'write EIO (2nd write of each thread)', inject: [`${WRITES}:error=EIO:when=2`], expect: 'continues' },
  { name: 'write EIO (5th)', inject: [`${WRITES}:error=EIO:when=5`], expect: 'continues' },
  { name: 'write ENOSPC (3rd)', inject: [`${WRITES}:error=ENOSPC:when=3`], expect: 'answers' },
  { name: 'write ENOSPC, then its cut-back (ftruncate) fails', inject: [`${WRITES}:error=ENOSPC:when=2`, 'ftruncate:error=EIO:when=1'], expect: 'exits' },
  { name: 'fdatasync EIO (1st)', inject: ['fdatasync:error=EIO:when=1'], expect: 'exits' },
  { name: 'fdatasync EIO (3rd)', inject: ['fdatasync:error=EIO:when=3'], expect: 'exits' },
  { name: 'openat EIO (1st: the segment at start-up)', inject: ['openat:error=EIO:when=1'], expect: 'start-fails' },
  { name: 'openat EIO (2nd: the segment again at start-up)', inject: ['openat:error=EIO:when=2'], expect: 'start-fails' },
];

t.test('every file-system call of the queue log failing once', { skip: straceUsable() ? false : 'strace is missing or may not trace here (scripts/tools.sh strace)' }, async (t) => {
  const template = await prepareTemplate(t);
  for (const [i, c] of CASES.entries()) await runCase(t, c, template, i);
});
