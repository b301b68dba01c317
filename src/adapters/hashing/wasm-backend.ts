import { createSHA256, type IHasher } from 'hash-wasm';
import { TsHashingBackend } from './ts-backend.js';

/**
 * RFC 8785 in TypeScript plus hash-wasm's SHA-256 with one reused hasher: the fastest option
 * measured here for 33- and 65-byte Merkle inputs, where a call into OpenSSL costs more than the
 * hashing itself. Not safe to share across threads (none of these are): one instance per thread.
 */
export class WasmHashingBackend extends TsHashingBackend {
  private constructor(hasher: IHasher) {
    super('wasm', (data) => hasher.init().update(data).digest('hex'), {
      digestInto: (data, out, offset) => {
        out.set(hasher.init().update(data).digest('binary'), offset);
      },
    });
  }

  static async create(): Promise<WasmHashingBackend> {
    return new WasmHashingBackend(await createSHA256());
  }
}
