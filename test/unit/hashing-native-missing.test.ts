import t from 'tap';

// Must run before anything loads the addon: this process never finds it (configuration's
// DRIS_NATIVE_ADDON, as the composition root passes it down).
const { useNativeAddon } = await import('../../src/adapters/hashing/native-backend.js');
useNativeAddon('/nonexistent/dris-native.node');

const { loadHashingBackend } = await import('../../src/adapters/hashing/select-backend.js');
const { isDrisError } = await import('../../src/errors/dris-error.js');

t.test('an explicit backend that cannot load fails with backend_unavailable and a cause', async (t) => {
  try {
    await loadHashingBackend('native');
    t.fail('should throw');
  } catch (e) {
    t.ok(isDrisError(e));
    if (isDrisError(e)) {
      t.equal(e.code, 'backend_unavailable');
      t.ok(e.cause !== undefined, 'carries the load error');
    }
  }
});

t.test('auto falls back to wasm and reports what it tried', async (t) => {
  const loaded = await loadHashingBackend('auto');
  t.equal(loaded.backend.name, 'wasm');
  t.same(loaded.tried.map((x) => x.name), ['native']);
  t.ok(isDrisError(loaded.tried[0]?.error));
});
