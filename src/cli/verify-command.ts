import { toDrisError } from '../errors/dris-error.js';
import { loadToolConfig } from '../config/cli-config.js';
import { exitCodeOf, verifyReceipt } from '../app/offline-verify/verify-receipt.js';
import type { VerifyArgs, VerifyDeps } from '../app/offline-verify/types.js';
import { parseVerifyArgs, VERIFY_USAGE } from './verify/args.js';
import { renderReport } from './verify/render.js';

/**
 * `dris verify <receipt.json>`: arguments (verify/args.ts), the offline verification use case
 * (src/app/offline-verify/) with the chain reader, gateway and hashing backend the composition
 * root provides, and the report (verify/render.ts or JSON).
 */

export { parseVerifyArgs, VERIFY_USAGE } from './verify/args.js';
export { renderReport } from './verify/render.js';
export { exitCodeOf, verifyReceipt } from '../app/offline-verify/verify-receipt.js';
export type * from '../app/offline-verify/types.js';

export interface VerifyIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

const processIo: VerifyIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/** The whole command: arguments to exit status. */
export async function verifyCommand(argv: readonly string[], io: VerifyIo = processIo, deps?: VerifyDeps): Promise<0 | 1 | 2> {
  let args: VerifyArgs | 'help';
  try {
    args = parseVerifyArgs(argv);
  } catch (err) {
    io.stderr(`dris verify: ${toDrisError(err).message}\n${VERIFY_USAGE}\n`);
    return 2;
  }
  if (args === 'help') {
    io.stdout(`${VERIFY_USAGE}\n`);
    return 0;
  }
  // The composition root's tools, loaded only when a receipt is to be checked.
  const { offlineVerifyDeps } = await import('../composition/tools.js');
  const report = await verifyReceipt(args, deps ?? offlineVerifyDeps(loadToolConfig()));
  io.stdout(args.json ? `${JSON.stringify(report, null, 2)}\n` : renderReport(report));
  return exitCodeOf(report);
}
