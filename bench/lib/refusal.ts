/**
 * A bench that must not start, said plainly: a missing tool (with how to get it), a fallback hash
 * backend, or a bad option. The entry point prints the message without a stack and exits 2.
 */
export class BenchRefusal extends Error {
  override readonly name = 'BenchRefusal';
  constructor(
    message: string,
    /** What to run or install to get past the refusal, one command or sentence per line. */
    readonly remedy: readonly string[] = [],
  ) {
    super(message);
  }
}

export function isBenchRefusal(err: unknown): err is BenchRefusal {
  return err instanceof BenchRefusal;
}

/** Exit status of a refused run (usage error, missing tool, fallback backend). */
export const EXIT_REFUSED = 2;
/** Exit status of `--compare` when a figure regressed past the threshold. */
export const EXIT_REGRESSION = 3;
