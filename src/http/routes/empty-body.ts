import { DrisError } from '../../errors/dris-error.js';
import { ijsonBody } from '../params.js';
import type { RequestContext } from '../router.js';
import type { BodySpec, Schema } from '../route-spec.js';

/** The body of an action that takes none: absent, or an empty JSON object. */
export const EMPTY_BODY: BodySpec = {
  schema: {
    version: '3.1',
    components: { schemas: { EmptyObject: { type: 'object', description: 'An empty JSON object.', properties: {}, additionalProperties: false } } },
    schema: { $ref: '#/components/schemas/EmptyObject' },
  } as Schema,
  required: false,
  limit: { bytes: 1024 },
};

/** Refuses a body that is not absent or `{}` (400). */
export function noMembers(ctx: RequestContext): void {
  const value = ijsonBody(ctx);
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.keys(value).length > 0) {
    throw new DrisError('validation_failed', 'this request takes no body', { fields: [{ path: '(body)', code: 'invalid_type', message: 'must be absent or an empty JSON object' }] });
  }
}
