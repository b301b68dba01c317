import t from 'tap';
import { startFleet, type Fleet } from '../harness/fleet.js';
import { ingestSuite, type Target } from '../integration/ingest-suite.js';

/**
 * The black-box ingest suite against the local fleet's load balancer: HAProxy round robin over two
 * api processes, two indexers and two anchorers on a 3-node NATS cluster, Redis and the ClickHouse
 * HTTP interface. The administration listener is the first api process's.
 */

function fleetTarget(fleet: Fleet): Target {
  const admin = fleet.byRole('api')[0]?.handle;
  if (admin === undefined) throw new Error('the fleet has no api process');
  return {
    url: fleet.url,
    adminUrl: admin.adminUrl,
    adminPort: admin.adminPort,
    adminToken: fleet.adminToken,
    env: admin.env,
    async crashAndRestart() {
      // Every dris process at once: what was acknowledged lives in the NATS cluster only.
      await Promise.all(fleet.processes.map((p) => p.kill('SIGKILL')));
      for (const p of fleet.processes) await p.start();
      await fleet.lb.waitUp();
      return fleetTarget(fleet);
    },
    dispose: () => fleet.stop(),
    // Debian 12's HAProxy 2.6 (the local fleet's) resets what it did not drain.
    resetsEarlyRefusals: true,
  };
}

ingestSuite(t, {
  name: 'fleet',
  env: () => Promise.resolve({}),
  start: async (env) => {
    // Revocations reach the other api process within 100 ms (the suite checks them at once).
    const fleet = await startFleet({ env: { ...env, DRIS_KEY_REFRESH_MS: '100' } });
    return fleetTarget(fleet);
  },
});
