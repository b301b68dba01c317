import { pino, type Logger, type LevelWithSilent } from 'pino';

/**
 * Structured logs. Every module logs through a child with its `component`; keys, secrets and
 * record payloads are never passed to a logger (redaction below is a second line of defence).
 */
export type { Logger };

let root: Logger = pino({
  level: process.env['DRIS_LOG_LEVEL'] ?? 'info',
  base: { service: 'dris', pid: process.pid },
  redact: {
    paths: ['apiKey', '*.apiKey', 'key', '*.key', 'secret', '*.secret', 'recordPayload', '*.recordPayload', 'payload', '*.payload', 'headers["x-api-key"]'],
    censor: '[redacted]',
  },
});

export function setLogLevel(level: LevelWithSilent): void {
  root.level = level;
}

export function replaceRootLogger(logger: Logger): void {
  root = logger;
}

export function componentLogger(component: string): Logger {
  return root.child({ component });
}
