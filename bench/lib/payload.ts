/** A record of about 1 KiB (an invoice with eight lines), the same in every scenario. */
export function payload1k(i: number): Record<string, unknown> {
  const lines = Array.from({ length: 8 }, (_, k) => ({ sku: `SKU-${i}-${k}`, qty: k + 1, price: 12.5 + k, note: 'standard delivery' }));
  return { invoice: `INV-${i}`, customer: { id: `C-${i % 997}`, name: 'Example Customer Ltd', country: 'DE' }, currency: 'EUR', total: 1234.56, lines, memo: 'x'.repeat(200) };
}
