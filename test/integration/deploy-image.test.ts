import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { deployDir, deployTools, run } from '../harness/deploy-tools.js';

/**
 * deploy/docker: the Dockerfile passes hadolint and has the shape operators rely on (no Docker
 * engine here to build it); its entrypoint and health check are run for real.
 */

const dockerDir = path.join(deployDir, 'docker');
const dockerfile = path.join(dockerDir, 'Dockerfile');

void t.test('the Dockerfile passes hadolint, and hadolint does find faults', async (t) => {
  const { hadolint } = deployTools();
  const clean = await run(hadolint, ['--no-color', dockerfile]);
  t.equal(clean.code, 0, clean.stdout + clean.stderr);
  t.equal(clean.stdout.trim(), '', 'no finding at all, not even info');

  const faulty = await run(hadolint, ['--no-color', '-'], { input: 'FROM debian\nRUN apt-get install curl\nUSER root\n' });
  t.equal(faulty.code, 1);
  t.match(faulty.stdout, /DL3006/, 'untagged base image');
  t.match(faulty.stdout, /DL3002/, 'last user root');
});

void t.test('the image: multi-stage, native addon built, slim glibc runtime, non-root, volume, ports, health check, entrypoint', async (t) => {
  const text = await readFile(dockerfile, 'utf8');
  const froms = [...text.matchAll(/^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/gim)].map((m) => ({ image: m[1] as string, stage: m[2] }));
  t.same(
    froms.map((f) => f.stage),
    ['rust', 'build', 'runtime'],
  );
  t.match(froms[1]?.image, /^node:\$\{NODE_VERSION\}-\$\{DEBIAN_RELEASE\}$/);
  t.match(froms[2]?.image, /^node:\$\{NODE_VERSION\}-\$\{DEBIAN_RELEASE\}-slim$/, 'slim Debian runtime (glibc, not Alpine)');
  t.match(text, /^ARG NODE_VERSION=20\.\d+\.\d+$/m, 'Node 20, as package.json engines');
  t.match(text, /^ARG DEBIAN_RELEASE=bookworm$/m, 'glibc 2.36 >= 2.31 for the uWebSockets.js binary');
  t.match(text, /npm ci --ignore-scripts/);
  t.match(text, /bash scripts\/build-native\.sh release/, 'native addon built');
  t.match(text, /npm run -s build/);
  t.match(text, /npm prune --omit=dev/, 'dev dependencies pruned');
  t.match(text, /^USER 10001:10001$/m, 'numeric non-root user');
  t.match(text, /^VOLUME \["\/var\/lib\/dris"\]$/m);
  t.match(text, /DRIS_DATA_DIR=\/var\/lib\/dris/);
  t.match(text, /^EXPOSE 8080 8081 9464$/m);
  t.match(text, /DRIS_OPS_PORT=9464/);
  t.match(text, /^HEALTHCHECK .*\n\s+CMD \["node", "\/app\/healthcheck\.mjs"\]$/m);
  t.match(text, /^ENTRYPOINT \["\/usr\/bin\/tini", "--", "\/usr\/local\/bin\/dris-entrypoint"\]$/m);
  t.match(text, /^CMD \["serve"\]$/m, 'dris serve by default');
  const ignore = await readFile(path.join(dockerDir, 'Dockerfile.dockerignore'), 'utf8');
  for (const entry of ['**/node_modules', 'dist', 'data', 'native/target', '.git', 'deploy/compose/secrets']) {
    t.ok(ignore.split('\n').includes(entry), `build context excludes ${entry}`);
  }
});

/** Runs deploy/docker/entrypoint.sh with a stand-in `dris` that prints its arguments and environment. */
async function runEntrypoint(dir: string, args: readonly string[], env: Record<string, string>) {
  const fake = path.join(dir, 'bin', 'dris');
  return run('sh', [path.join(dockerDir, 'entrypoint.sh'), ...args], {
    env: { PATH: `${path.dirname(fake)}:/usr/bin:/bin`, ...env },
  });
}

void t.test('the entrypoint: VAR_FILE secrets, DRIS_ENV_FILES, refusals with exit 78, then exec dris', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'dris-entrypoint-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const bin = path.join(dir, 'bin');
  await mkdir(bin);
  await writeFile(
    path.join(bin, 'dris'),
    '#!/bin/sh\necho "args=$*"\nenv | grep -E "^(DRIS_|NATS_|REDIS_|CLICKHOUSE_)" | sort\n',
  );
  await chmod(path.join(bin, 'dris'), 0o755);
  const keyFile = path.join(dir, 'anchorer-key');
  await writeFile(keyFile, '0xabc123\n');
  const pwFile = path.join(dir, 'nats-password');
  await writeFile(pwFile, 's3cret');
  const envFile = path.join(dir, 'contract.env');
  await writeFile(envFile, 'DRIS_CONTRACT_ADDRESS=0x5FbDB2315678afecb367f032d93F642f64180aa3\nDRIS_CONTRACT_DEPLOY_BLOCK=7\n');

  const ok = await runEntrypoint(dir, ['serve'], {
    DRIS_ANCHORER_KEY_FILE: keyFile,
    NATS_PASSWORD_FILE: pwFile,
    DRIS_ENV_FILES: envFile,
    REDIS_PASSWORD: 'direct',
  });
  t.equal(ok.code, 0, ok.stderr);
  const lines = ok.stdout.trim().split('\n');
  t.equal(lines[0], 'args=serve');
  t.ok(lines.includes('DRIS_ANCHORER_KEY=0xabc123'), 'value read from the file, trailing newline dropped');
  t.ok(lines.includes('NATS_PASSWORD=s3cret'));
  t.ok(lines.includes('REDIS_PASSWORD=direct'), 'a variable without _FILE is left as it is');
  t.ok(lines.includes('DRIS_CONTRACT_ADDRESS=0x5FbDB2315678afecb367f032d93F642f64180aa3'), 'DRIS_ENV_FILES read');
  t.ok(lines.includes('DRIS_CONTRACT_DEPLOY_BLOCK=7'));
  t.notOk(
    lines.some((l) => l.startsWith('DRIS_ANCHORER_KEY_FILE=') || l.startsWith('NATS_PASSWORD_FILE=')),
    'the _FILE variables are not passed on',
  );

  const defaults = await runEntrypoint(dir, ['migrate'], {});
  t.equal(defaults.code, 0, defaults.stderr);
  t.match(defaults.stdout, /^args=migrate$/m, 'any dris subcommand');

  const both = await runEntrypoint(dir, ['serve'], { NATS_PASSWORD: 'x', NATS_PASSWORD_FILE: pwFile });
  t.equal(both.code, 78, 'VAR and VAR_FILE both set');
  t.notMatch(both.stdout, /args=/, 'dris not started');

  const missing = await runEntrypoint(dir, ['serve'], { DRIS_ANCHORER_KEY_FILE: path.join(dir, 'absent') });
  t.equal(missing.code, 78, 'unreadable secret file');
  const missingEnv = await runEntrypoint(dir, ['serve'], { DRIS_ENV_FILES: `${envFile},${path.join(dir, 'absent.env')}` });
  t.equal(missingEnv.code, 78, 'a listed environment file that is missing');
});

/** A loopback ops port whose /livez answers `status` (or never, with 0). */
async function opsStub(status: number): Promise<{ port: number; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (status === 0) return; // hangs: the health check's own deadline must end it
    res.statusCode = req.url === '/livez' ? status : 404;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

void t.test('the health check: 0 on a 2xx /livez, 1 on an error status, a hang or no listener', async (t) => {
  const script = path.join(dockerDir, 'healthcheck.mjs');
  const check = (port: number) => run(process.execPath, [script], { env: { DRIS_OPS_PORT: String(port) }, timeoutMs: 10_000 });
  for (const [status, expected] of [
    [200, 0],
    [503, 1],
    [0, 1],
  ] as const) {
    const stub = await opsStub(status);
    const r = await check(stub.port);
    await stub.close();
    t.equal(r.code, expected, `/livez answering ${status === 0 ? 'never' : status}`);
  }
  const closed = await opsStub(200);
  await closed.close();
  t.equal((await check(closed.port)).code, 1, 'nothing listening');
});
