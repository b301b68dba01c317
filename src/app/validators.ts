import typia, { type IValidation, type tags } from 'typia';
import type { FieldError } from '../errors/dris-error.js';
import type { IngestRecordRequest, TenantId } from '../domain/records/types.js';

/**
 * Request validators compiled by typia from the same declarations the OpenAPI document is made
 * from. typia reports paths as `$input.a[0].b`; they are rewritten to the public path format
 * (`a[0].b`) under the caller's prefix, one FieldError per offending path.
 */

export type Checked<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

const validateRecord = typia.createValidate<IngestRecordRequest>();

interface BulkA {
  tenantId: TenantId;
  records: unknown[] & tags.MinItems<1> & tags.MaxItems<1000>;
}
interface BulkB {
  items: unknown[] & tags.MinItems<1> & tags.MaxItems<1000>;
}
const validateBulkA = typia.createValidate<BulkA>();
const validateBulkB = typia.createValidate<BulkB>();

function codeOf(expected: string, value: unknown): string {
  if (value === undefined) return 'required';
  if (/Format<|Pattern</.test(expected)) return 'invalid_format';
  if (/MinLength<|MaxLength</.test(expected)) return 'invalid_length';
  if (/MinItems<|MaxItems</.test(expected)) return 'invalid_count';
  if (/^\(?"/.test(expected)) return 'invalid_enum';
  return 'invalid_type';
}

function messageOf(code: string, expected: string): string {
  switch (code) {
    case 'required':
      return 'is required';
    case 'invalid_format':
      return /date-time/.test(expected) ? 'must be an ISO 8601 date-time' : `does not match the required format ${expected}`;
    case 'invalid_length':
      return `has an invalid length (${expected})`;
    case 'invalid_count':
      return `has an invalid number of items (${expected})`;
    case 'invalid_enum':
      return `must be one of ${expected.replace(/[()]/g, '')}`;
    default:
      return `must be ${expected}`;
  }
}

export function toFieldErrors(errors: readonly IValidation.IError[], prefix: string): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of errors) {
    const rel = e.path.replace(/^\$input\.?/, '');
    const path = prefix === '' ? rel || '(body)' : rel === '' ? prefix.replace(/\.$/, '') : `${prefix}${rel.startsWith('[') ? rel : rel}`;
    // One entry per path: a union mismatch reports every branch, callers want the field.
    if (seen.has(path)) continue;
    seen.add(path);
    const code = codeOf(e.expected, e.value);
    out.push({ path: path.replace(/\.\[/g, '['), code, message: messageOf(code, e.expected) });
  }
  return out;
}

export function validateIngestRecord(value: unknown, prefix: string): Checked<IngestRecordRequest> {
  const r = validateRecord(value);
  if (r.success) {
    if (Array.isArray(r.data.recordPayload)) {
      return { ok: false, errors: [{ path: `${prefix}recordPayload`, code: 'invalid_type', message: 'must be an object' }] };
    }
    return { ok: true, value: r.data };
  }
  return { ok: false, errors: toFieldErrors(r.errors, prefix) };
}

export type BulkEnvelope = { ok: true; form: 'A' | 'B'; tenantId: string | null; items: unknown[] } | { ok: false; errors: FieldError[] };

export function validateBulkEnvelope(value: unknown, maxItems: number): BulkEnvelope {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, errors: [{ path: '(body)', code: 'invalid_type', message: 'must be an object with records or items' }] };
  }
  const hasRecords = 'records' in value;
  const hasItems = 'items' in value;
  if (hasRecords && hasItems) {
    return { ok: false, errors: [{ path: '(body)', code: 'ambiguous_form', message: 'send either records (with tenantId) or items, not both' }] };
  }
  if (!hasRecords && !hasItems) {
    return { ok: false, errors: [{ path: 'items', code: 'required', message: 'is required (or records with tenantId)' }] };
  }
  if (hasRecords) {
    const r = validateBulkA(value);
    if (!r.success) return { ok: false, errors: toFieldErrors(r.errors, '') };
    if (r.data.records.length > maxItems || r.data.records.length < 1) return { ok: false, errors: [{ path: 'records', code: 'invalid_count', message: `must hold 1 to ${maxItems} records` }] };
    return { ok: true, form: 'A', tenantId: r.data.tenantId, items: r.data.records };
  }
  const r = validateBulkB(value);
  if (!r.success) return { ok: false, errors: toFieldErrors(r.errors, '') };
  if (r.data.items.length > maxItems || r.data.items.length < 1) return { ok: false, errors: [{ path: 'items', code: 'invalid_count', message: `must hold 1 to ${maxItems} items` }] };
  return { ok: true, form: 'B', tenantId: null, items: r.data.items };
}
