/**
 * String.prototype.isWellFormed (V8 11.3, Node 20) is missing from the ES2023 lib typings; this
 * keeps the typing local instead of widening the project's lib.
 */
interface WellFormedString {
  isWellFormed(): boolean;
}

export function isWellFormed(s: string): boolean {
  return (s as unknown as WellFormedString).isWellFormed();
}
