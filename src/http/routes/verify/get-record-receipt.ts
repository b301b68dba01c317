import typia from 'typia';
import { recordReceipt } from '../../../app/verify/record-receipt.js';
import type { Receipt } from '../../../domain/verification/types.js';
import { callerOf } from '../../params.js';
import { flag, readQuery, requiredText, tenant, text } from '../../query.js';
import { error, json, reply, route } from '../../route-spec.js';
import { api } from '../bind.js';

const query = {
  collection: requiredText('Collection.'),
  recordId: requiredText('Record identifier.'),
  database: text('Database.'),
  recordVersion: text('Version (default: the newest).'),
  tenantId: tenant(),
  includePayload: flag('true to include the payload (needs the payload scope of the retrieval policy).'),
};

export const GetRecordReceipt = route('GET /api/v1/receipts/record', 'GetRecordReceipt', 'Verification', 'Download the receipt of an anchored record (offline evidence bundle)', {
  query,
  responses: {
    200: { ...json('Receipt, served as an attachment; check it with `dris verify`.', typia.json.schema<Receipt, '3.1'>()), headers: ['Content-Disposition'] },
    403: error("The key may not act for the tenant (forbidden_tenant), or the tenant's retrieval policy denies this client (forbidden_client, with scope and reason)."),
    404: error('Unknown record.'),
    409: error('The record is not anchored yet (invalid_state, with its status).'),
  },
  bind: api((s) => async (ctx) => {
    const { receipt, fileName } = await recordReceipt(s, callerOf(ctx), readQuery(ctx.query, query));
    return reply<Receipt>(200, receipt, { 'Content-Disposition': `attachment; filename="${fileName}"` });
  }),
});
