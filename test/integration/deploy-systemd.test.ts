import { chmod, cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { deployDir, deployTools, run } from '../harness/deploy-tools.js';

/**
 * deploy/systemd: the units pass `systemd-analyze verify` (in a scratch root holding the units,
 * their environment files, the host's own unit directory and a stand-in node, so nothing of this
 * machine is touched), their exposure stays low (`systemd-analyze security`), and they carry the
 * restart, stop and hardening settings dris relies on.
 */

const unitsDir = path.join(deployDir, 'systemd');
const UNITS = ['dris@.service', 'dris-migrate.service', 'dris.target'];

/** A root with the units installed as the operations guide says, plus what verify looks up. */
async function scratchRoot(t: Test, mutate?: (unit: string) => string): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'dris-systemd-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const system = path.join(root, 'etc', 'systemd', 'system');
  await mkdir(system, { recursive: true });
  for (const unit of UNITS) {
    const text = await readFile(path.join(unitsDir, unit), 'utf8');
    await writeFile(path.join(system, unit), mutate === undefined ? text : mutate(text));
  }
  await mkdir(path.join(root, 'etc', 'dris'), { recursive: true });
  await cp(path.join(unitsDir, 'dris.env.example'), path.join(root, 'etc', 'dris', 'dris.env'));
  for (const instance of ['api-1', 'indexer-1', 'anchorer-1']) {
    await cp(path.join(unitsDir, `${instance}.env.example`), path.join(root, 'etc', 'dris', `${instance}.env`));
  }
  // verify resolves sysinit.target, basic.target, ... from the root's unit directories.
  await cp('/usr/lib/systemd/system', path.join(root, 'usr', 'lib', 'systemd', 'system'), { recursive: true, verbatimSymlinks: true });
  await mkdir(path.join(root, 'usr', 'bin'), { recursive: true });
  await writeFile(path.join(root, 'usr', 'bin', 'node'), '#!/bin/sh\nexit 0\n');
  await chmod(path.join(root, 'usr', 'bin', 'node'), 0o755);
  await mkdir(path.join(root, 'opt', 'dris', 'dist', 'src', 'cli'), { recursive: true });
  await writeFile(path.join(root, 'opt', 'dris', 'dist', 'src', 'cli', 'dris.js'), '');
  return root;
}

const INSTANCES = ['dris@api-1.service', 'dris@indexer-1.service', 'dris@anchorer-1.service', 'dris-migrate.service', 'dris.target'];

void t.test('systemd-analyze verify accepts the units without a single warning', async (t) => {
  const root = await scratchRoot(t);
  const r = await run(deployTools().systemdAnalyze, ['verify', `--root=${root}`, '--man=no', ...INSTANCES], { cwd: root });
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stderr.trim(), '', 'verify reports problems on stderr, some with exit 0');
});

void t.test('verify does report a misspelt key and an unparseable value', async (t) => {
  const root = await scratchRoot(t, (text) => text.replace('ProtectClock=yes', 'ProtectClock=perhaps\nRestartt=always'));
  const r = await run(deployTools().systemdAnalyze, ['verify', `--root=${root}`, '--man=no', 'dris@api-1.service'], { cwd: root });
  t.match(r.stderr, /dris@\.service:\d+: .*perhaps/, 'the unparseable value, with its line');
  t.match(r.stderr, /Restartt/);
});

void t.test('the process unit stays at a low exposure level', async (t) => {
  const root = await scratchRoot(t);
  for (const unit of ['dris@api-1.service', 'dris-migrate.service']) {
    const r = await run(deployTools().systemdAnalyze, ['security', '--offline=yes', `--root=${root}`, '--threshold=30', '--no-pager', unit], { cwd: root });
    t.equal(r.code, 0, `${unit}: exposure at most 3.0 of 10\n${r.stdout.split('\n').slice(-3).join('\n')}${r.stderr}`);
  }
});

void t.test('restart on exit 74, a bounded graceful stop, a data directory, hardening', async (t) => {
  const unit = await readFile(path.join(unitsDir, 'dris@.service'), 'utf8');
  const settings = new Map<string, string[]>();
  for (const line of unit.split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (m !== null) settings.set(m[1] as string, [...(settings.get(m[1] as string) ?? []), m[2] as string]);
  }
  const one = (k: string) => settings.get(k)?.at(-1);
  t.equal(one('Restart'), 'on-failure');
  t.equal(one('TimeoutStopSec'), '45s');
  t.equal(one('KillSignal'), 'SIGTERM');
  t.equal(one('User'), 'dris');
  t.same(settings.get('EnvironmentFile'), ['/etc/dris/dris.env', '/etc/dris/%i.env']);
  t.equal(one('ExecStart'), '/usr/bin/node /opt/dris/dist/src/cli/dris.js serve');
  t.equal(one('StateDirectory'), 'dris/%i');
  t.equal(one('ReadWritePaths'), '/var/lib/dris/%i');
  for (const [k, v] of [
    ['NoNewPrivileges', 'yes'],
    ['ProtectSystem', 'strict'],
    ['ProtectHome', 'yes'],
    ['PrivateTmp', 'yes'],
    ['PrivateDevices', 'yes'],
    ['RestrictSUIDSGID', 'yes'],
    ['CapabilityBoundingSet', ''],
  ]) {
    t.equal(one(k as string), v, `${k}=${v}`);
  }
  t.equal(one('MemoryDenyWriteExecute'), undefined, "Node's JIT needs W+X memory");
});
