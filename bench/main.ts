import { benchMain } from './cli.js';

/** `npm run bench -- ...`: the bench command line as a program. */
const status = await benchMain(process.argv.slice(2));
// Explicit exit: a service child or a chDB session left by a failed run must not keep the process up.
process.exit(status);
