/**
 * The first sentence of parseArgs's refusal (an unknown or incomplete option), for a one-line
 * message above the usage; undefined for any other error, which the caller rethrows.
 */
export function parseArgsRefusal(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (!(err instanceof TypeError) || typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS')) return undefined;
  return err.message.split('. ')[0] ?? err.message;
}
