import type { OutgoingRecord } from '../../domain/records/types.js';

/**
 * A frame's metadata: the record's members without its payload, in the order they are written
 * (JSON.stringify's order for the object the codec once built). native/src/frames.rs holds the
 * same list; the codec's tests compare what both write.
 */
export const META_MEMBERS = [
  'ingestId',
  'clientId',
  'keyId',
  'hashScheme',
  'tenantId',
  'database',
  'collection',
  'recordId',
  'recordVersion',
  'operationType',
  'sourceTimestamp',
  'payloadHash',
  'salt',
  'recordHash',
  'acceptedAt',
  'idempotencyKey',
  'correlationId',
] as const satisfies readonly (keyof OutgoingRecord)[];

/** The members that may be null. */
export const NULLABLE_META_MEMBERS: ReadonlySet<(typeof META_MEMBERS)[number]> = new Set(['sourceTimestamp', 'idempotencyKey']);
