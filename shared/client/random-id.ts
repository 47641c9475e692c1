/**
 * RFC 4122 v4 ids without importing node:crypto. `crypto.randomUUID` exists in Node ≥ 19 and in
 * browsers, but browsers only expose it in secure contexts (https, localhost); a page served over
 * plain http on a LAN still has `getRandomValues`, so fall back to that before giving up.
 */
interface CryptoLike {
  randomUUID?: () => string;
  getRandomValues?: (array: Uint8Array) => Uint8Array;
}

export function randomUuid(): string {
  const crypto = (globalThis as { crypto?: CryptoLike }).crypto;
  if (crypto?.randomUUID) return crypto.randomUUID();
  if (!crypto?.getRandomValues) {
    // Ids name sessions and clients; predictable ones would let clients collide.
    throw new Error('No Web Crypto in this runtime: pass clientId / session explicitly');
  }
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40; // version 4
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80; // RFC 4122 variant
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
