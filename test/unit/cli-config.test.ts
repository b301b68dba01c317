import path from 'node:path';
import t from 'tap';
import { loadAdminClientConfig, loadDataDir, loadToolConfig } from '../../src/config/cli-config.js';
import { loadConfig } from '../../src/config/config.js';
import { definedOnly } from '../../src/util/defined.js';

/**
 * What the CLI's tools read of the environment, through src/config only: each its own variables,
 * with the defaults the service binds to.
 */

const cwd = '/srv/dris';

t.test('the admin listener is found where the service binds it, a wildcard on loopback', async (t) => {
  t.equal(loadAdminClientConfig({}, cwd).url, 'http://127.0.0.1:8081');
  t.equal(loadAdminClientConfig({ DRIS_ADMIN_HOST: '0.0.0.0', DRIS_ADMIN_PORT: '9000' }, cwd).url, 'http://127.0.0.1:9000');
  t.equal(loadAdminClientConfig({ DRIS_ADMIN_HOST: '::' }, cwd).url, 'http://127.0.0.1:8081');
  t.equal(loadAdminClientConfig({ DRIS_ADMIN_HOST: '::1' }, cwd).url, 'http://[::1]:8081');
  t.equal(loadAdminClientConfig({ DRIS_ADMIN_HOST: '10.0.0.5', DRIS_ADMIN_URL: 'https://admin.example:8443/' }, cwd).url, 'https://admin.example:8443/', 'DRIS_ADMIN_URL wins');
  t.equal(loadAdminClientConfig({ DRIS_ADMIN_PORT: '0' }, cwd).url, undefined, 'a port chosen at start cannot be derived');
  t.equal(loadAdminClientConfig({ DRIS_ADMIN_PORT: '0', DRIS_ADMIN_URL: 'http://127.0.0.1:4444' }, cwd).url, 'http://127.0.0.1:4444');
});

t.test('the admin token comes from DRIS_ADMIN_TOKEN, else the file under the data directory', async (t) => {
  const unset = loadAdminClientConfig({ DRIS_ADMIN_TOKEN: '  ' }, cwd);
  t.equal(unset.token, undefined, 'blank counts as unset');
  t.equal(unset.tokenFile, path.join(cwd, 'data', 'admin-token'));
  const set = loadAdminClientConfig({ DRIS_ADMIN_TOKEN: 'x'.repeat(40), DRIS_DATA_DIR: '/var/lib/dris' }, cwd);
  t.equal(set.token, 'x'.repeat(40));
  t.equal(set.tokenFile, '/var/lib/dris/admin-token');
});

t.test('the data directory and the tool settings', async (t) => {
  t.equal(loadDataDir({}, cwd), path.join(cwd, 'data'));
  t.equal(loadDataDir({ DRIS_DATA_DIR: 'state' }, cwd), path.join(cwd, 'state'));
  t.same(loadToolConfig({}, cwd), { logLevel: 'info' });
  t.same(loadToolConfig({ DRIS_LOG_LEVEL: 'silent', DRIS_NATIVE_ADDON: 'build/x.node' }, cwd), { logLevel: 'silent', nativeAddon: path.join(cwd, 'build/x.node') });
  t.same(loadToolConfig({ DRIS_LOG_LEVEL: 'loud' }, cwd), { logLevel: 'info' }, 'an invalid level leaves the default');
});

t.test('definedOnly drops the undefined members only', async (t) => {
  t.same(definedOnly({ a: 1, b: undefined, c: '', d: null, e: 0 }), { a: 1, c: '', d: null, e: 0 });
  t.notOk('b' in definedOnly({ b: undefined }));
});

t.test('the service configuration carries the native addon file, resolved, and the log level', async (t) => {
  t.equal(loadConfig({}, cwd).nativeAddon, undefined);
  const c = loadConfig({ DRIS_NATIVE_ADDON: 'native/custom.node', DRIS_LOG_LEVEL: 'warn' }, cwd);
  t.equal(c.nativeAddon, path.join(cwd, 'native/custom.node'));
  t.equal(c.logLevel, 'warn');
  t.throws(() => loadConfig({ DRIS_LOG_LEVEL: 'loud' }, cwd), { code: 'config_invalid' });
});
