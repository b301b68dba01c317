import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const cli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/dris.js');
const run = (...args: string[]): { status: number | null; stdout: string; stderr: string } => {
  const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', env: { ...process.env, DRIS_ADMIN_TOKEN: 'x', DRIS_URL: 'http://127.0.0.1:9' } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};

void t.test('keys --help prints the usage and succeeds', (t) => {
  const r = run('keys', '--help');
  t.equal(r.status, 0);
  t.match(r.stdout, /dris keys create --tenant T --client C/);
  t.end();
});

void t.test('bad options of keys answer with the usage and exit 2, never a stack trace', (t) => {
  for (const args of [
    ['keys', 'list', '--bogus'],
    ['keys', 'create', '--tenant'],
  ]) {
    const r = run(...args);
    t.equal(r.status, 2, args.join(' '));
    t.match(r.stderr, /^dris: .*\nusage:/);
    t.notMatch(r.stderr, /\n\s+at /, 'no stack frames');
  }
  t.end();
});
