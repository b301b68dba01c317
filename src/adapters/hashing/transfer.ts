/** A view that owns its whole ArrayBuffer, so transferring it detaches nothing else (copies otherwise). */
export function owning<T extends Uint8Array | Uint32Array>(view: T): T {
  if (view.byteOffset === 0 && view.byteLength === view.buffer.byteLength && !(view.buffer instanceof SharedArrayBuffer)) return view;
  return view.slice() as T;
}
