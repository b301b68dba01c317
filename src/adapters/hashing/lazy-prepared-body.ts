import type { FieldError } from '../../errors/dris-error.js';
import { parseIJson } from '../../domain/hashing/ijson.js';
import type { PreparedBody, PreparedPayload } from '../../domain/hashing/port.js';

/**
 * A PreparedBody whose parsed value is built only when asked for. Hashing does not need it, and
 * V8's JSON.parse builds it faster than any conversion from native code or another thread would.
 * A body with violations is parsed by the reference parser instead, whose value is exact even for
 * malformed strings (JSON.parse would reject or rewrite them).
 */
export class LazyPreparedBody implements PreparedBody {
  private parsed = false;
  private cachedValue: unknown;

  constructor(
    private readonly body: Uint8Array,
    readonly errors: readonly FieldError[],
    readonly payloads: readonly (PreparedPayload | null)[],
  ) {}

  get value(): unknown {
    if (!this.parsed) {
      this.parsed = true;
      if (this.errors.length === 0) {
        this.cachedValue = JSON.parse(Buffer.from(this.body.buffer, this.body.byteOffset, this.body.byteLength).toString('utf8'));
      } else if (this.errors.some((e) => e.code === 'invalid_json')) {
        this.cachedValue = undefined;
      } else {
        this.cachedValue = parseIJson(this.body, { forceReference: true }).value;
      }
    }
    return this.cachedValue;
  }
}
