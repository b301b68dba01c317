import type { LogLevel } from '../config/config.js';
import { createLogger, replaceRootLogger, type Logger } from '../util/logger.js';

/**
 * The root logger, made from configuration (level; redaction as logger.ts defines it). It is also
 * installed as the default root, so a component built without an injected logger logs the same way.
 */
export function rootLoggerOf(cfg: { readonly logLevel: LogLevel }): Logger {
  const root = createLogger(cfg.logLevel);
  replaceRootLogger(root);
  return root;
}
