import { DrisError, type FieldError } from '../errors/dris-error.js';
import { ROLES, type Config, type Role } from './types.js';

/**
 * Start-up guards: setups whose variables each parse but do not work together. `dris serve` runs
 * them before anything is opened (src/main.ts), and refuses with every problem at once, each
 * naming the variable to change, what is wrong and what to do (docs/operations.md, "Start-up
 * guards", has the table). They are not part of loadConfig: `dris chain deploy` and `dris migrate`
 * read the same configuration and must run where a service could not (no contract yet, one
 * process migrating for a fleet).
 *
 * A process whose DRIS_ROLES is not all three roles is one of a fleet: the other roles run in
 * other processes, so every part they share must be shared for real. An embedded part (queue,
 * index, admission store, chain, IPFS) lives in this process's data directory, which a lock keeps
 * every other process out of, and the embedded elector in its memory. Nothing else marks a fleet: one process with every role
 * may use external engines alone (a NATS queue, embedded everything else) and is not refused.
 */

export interface SetupReview {
  /** Setups that cannot work: start-up is refused. */
  readonly problems: readonly FieldError[];
  /** Setups that work but should change (logged at start). */
  readonly warnings: readonly FieldError[];
}

/** Field code of a variable a split role set needs, because the part it selects is shared. */
export const REQUIRED_BY_ROLES = 'required_by_roles';

/** Binds on every interface: not an address a client can be sent to. */
const WILDCARD_HOSTS: ReadonlySet<string> = new Set(['0.0.0.0', '::', '[::]', '::0']);

const has = (cfg: Config, role: Role): boolean => cfg.roles.includes(role);

function rolesOf(cfg: Config): string {
  return `DRIS_ROLES=${cfg.roles.join(',')}`;
}

/** One problem of a split role set: `reasons` say why these roles need `variable`; `fix` what to set it to. */
function splitProblem(cfg: Config, variable: string, reasons: readonly string[], fix: string): FieldError {
  return {
    path: variable,
    code: REQUIRED_BY_ROLES,
    message: `${rolesOf(cfg)} splits the roles across processes, but ${reasons.join('; and ')}. ${fix}, or unset DRIS_ROLES to run every role in this one process`,
  };
}

/** The engines every role of a fleet shares: the queue and the index. */
function sharedEngineProblems(cfg: Config): FieldError[] {
  const out: FieldError[] = [];
  if (cfg.nats === undefined) {
    out.push(
      splitProblem(
        cfg,
        'NATS_URL',
        ['the embedded queue is this process\'s own (in DRIS_DATA_DIR): records published here reach no other process, and records published elsewhere never reach this one'],
        'Set NATS_URL to the JetStream server(s) every process shares',
      ),
    );
  }
  if (cfg.clickhouse === undefined) {
    out.push(
      splitProblem(
        cfg,
        'CLICKHOUSE_URL',
        ['the embedded index (chDB in DRIS_DATA_DIR) is this process\'s own: records, keys and batches written here are invisible to the other processes, and theirs to this one'],
        'Set CLICKHOUSE_URL to the ClickHouse server every process shares',
      ),
    );
  }
  return out;
}

/** Redis: the api role's rate limits and idempotency keys, the anchorer role's leader election. */
function redisProblem(cfg: Config): FieldError | null {
  if (cfg.redis !== undefined) return null;
  const reasons: string[] = [];
  if (has(cfg, 'api')) {
    reasons.push('without REDIS_URL rate limits and idempotency keys are this api process\'s own: each api process grants a tenant its whole rate, and a retried request with an Idempotency-Key answered by another api process is stored twice');
  }
  if (has(cfg, 'anchorer')) {
    reasons.push('anchorers elect their one leader through Redis: without REDIS_URL this process leads alone, beside any other anchorer, and both anchor');
  }
  return reasons.length === 0 ? null : splitProblem(cfg, 'REDIS_URL', reasons, 'Set REDIS_URL to the Redis every process shares');
}

/** The chain and IPFS: where an anchorer publishes, and where an api process without one verifies. */
function anchorProblems(cfg: Config): FieldError[] {
  const out: FieldError[] = [];
  const anchors = has(cfg, 'anchorer');
  const verifiesElsewhere = has(cfg, 'api') && !anchors;
  const chain: string[] = [];
  if (anchors) chain.push('without EVM_RPC_URL this anchorer anchors on an embedded anvil of its own, which no other process reads and the next leader does not have');
  if (verifiesElsewhere) chain.push('verification in an api process reads anchors through EVM_RPC_URL: without it every anchored record verifies as chain_unavailable');
  if (cfg.chain.rpcUrl === undefined && chain.length > 0) {
    out.push(splitProblem(cfg, 'EVM_RPC_URL', chain, 'Set EVM_RPC_URL to the chain node the anchorers anchor on'));
  }
  if (verifiesElsewhere && cfg.chain.contractAddress === undefined) {
    out.push(
      splitProblem(
        cfg,
        'DRIS_CONTRACT_ADDRESS',
        ['verification in an api process reads the anchor contract at DRIS_CONTRACT_ADDRESS: without it every anchored record verifies as chain_unavailable'],
        'Set DRIS_CONTRACT_ADDRESS to the contract the anchorers use (the address `dris chain deploy` printed)',
      ),
    );
  }
  const ipfs: string[] = [];
  if (anchors) ipfs.push('without IPFS_API_URL manifests are pinned in this process\'s embedded blockstore, which no api process elsewhere serves or reads and the next leader does not have');
  if (verifiesElsewhere) ipfs.push('verification in an api process fetches manifests through Kubo (IPFS_API_URL): without it every anchored record verifies as ipfs_unavailable');
  if (cfg.ipfsApiUrl === undefined && ipfs.length > 0) {
    out.push(splitProblem(cfg, 'IPFS_API_URL', ipfs, 'Set IPFS_API_URL to the Kubo node every process shares'));
  }
  return out;
}

/** DRIS_FRONT_ONLY names one setup: the api role alone, its records consumed by nobody. */
function frontOnlyProblem(cfg: Config): FieldError | null {
  if (!cfg.frontOnly || (cfg.roles.length === 1 && has(cfg, 'api'))) return null;
  return {
    path: 'DRIS_FRONT_ONLY',
    code: 'invalid_value',
    message: `DRIS_FRONT_ONLY measures the api role alone, but ${rolesOf(cfg)}: set DRIS_ROLES=api, or unset DRIS_FRONT_ONLY`,
  };
}

/** What a process whose roles are split needs (nothing when it runs every role). */
function splitRoleProblems(cfg: Config): FieldError[] {
  if (ROLES.every((role) => has(cfg, role))) return [];
  // Said outright: the front measured alone, whose queue no other process was meant to read.
  if (cfg.frontOnly && cfg.roles.length === 1) return [];
  const redis = redisProblem(cfg);
  return [...sharedEngineProblems(cfg), ...(redis === null ? [] : [redis]), ...anchorProblems(cfg)];
}

/** An anchorer on an external chain anchors through a contract deployed beforehand (the adapter deploys none there). */
function contractProblem(cfg: Config): FieldError | null {
  if (!has(cfg, 'anchorer') || cfg.chain.rpcUrl === undefined || cfg.chain.contractAddress !== undefined) return null;
  return {
    path: 'DRIS_CONTRACT_ADDRESS',
    code: 'required',
    message: 'an external chain (EVM_RPC_URL) is anchored through a contract deployed once: run `dris chain deploy` with this configuration and set DRIS_CONTRACT_ADDRESS (and DRIS_CONTRACT_DEPLOY_BLOCK) to what it printed',
  };
}

/** The signing key anywhere but in an anchorer: a secret handed to a process that never signs. */
function keyWarnings(cfg: Config): FieldError[] {
  if (has(cfg, 'anchorer')) return [];
  const c = cfg.chain;
  const set: [string, string | undefined][] = [
    ['DRIS_ANCHORER_KEY', c.anchorerKey],
    ['DRIS_ANCHORER_KEYSTORE', c.keystoreFile],
    ['DRIS_ANCHORER_KEYSTORE_PASSWORD', c.keystorePassword],
  ];
  return set
    .filter(([, value]) => value !== undefined)
    .map(([variable]) => ({
      path: variable,
      code: 'unused_secret',
      message: `${rolesOf(cfg)} does not anchor and never signs, so ${variable} is not used here: remove it from this process's environment (only anchorer processes need the signing key)`,
    }));
}

/**
 * The embedded gateway (IPFS embedded, api and anchorer in this process) is named in verification
 * answers as http://HOST:PORT unless DRIS_IPFS_GATEWAY_URL says otherwise: a wildcard HOST there
 * is an address no client can reach.
 */
function gatewayWarning(cfg: Config): FieldError | null {
  const embeddedGateway = has(cfg, 'api') && has(cfg, 'anchorer') && cfg.ipfsApiUrl === undefined;
  if (!embeddedGateway || cfg.ipfsGatewayUrl !== undefined || !WILDCARD_HOSTS.has(cfg.host)) return null;
  return {
    path: 'DRIS_IPFS_GATEWAY_URL',
    code: 'unreachable_url',
    message: `verification answers name this service's IPFS gateway as http://${cfg.host}:<port>/ipfs/<cid>, and HOST=${cfg.host} binds every interface but is no address a client can use: set DRIS_IPFS_GATEWAY_URL to the base URL clients reach this service at`,
  };
}

/** The guards' findings for `cfg` (a configuration loadConfig accepted). */
export function reviewSetup(cfg: Config): SetupReview {
  const contract = contractProblem(cfg);
  const gateway = gatewayWarning(cfg);
  return {
    problems: [...splitRoleProblems(cfg), ...[contract, frontOnlyProblem(cfg)].filter((p): p is FieldError => p !== null)],
    warnings: [...keyWarnings(cfg), ...(gateway === null ? [] : [gateway])],
  };
}

/** Throws DrisError('config_invalid') listing every problem of the setup; returns the warnings to log. */
export function assertCoherentSetup(cfg: Config): readonly FieldError[] {
  const { problems, warnings } = reviewSetup(cfg);
  if (problems.length > 0) {
    throw new DrisError('config_invalid', `incoherent setup (docs/operations.md, start-up guards):${problems.map((p) => `\n  - ${p.path}: ${p.message}`).join('')}`, { fields: problems });
  }
  return warnings;
}
