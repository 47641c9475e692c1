/**
 * A loopback push service for tests: a real HTTP server that takes push messages the way a
 * browser vendor's would (RFC 8030), checks the VAPID JWT (RFC 8292: ES256, `aud` = this
 * service's origin, `sub`, `exp`) against the public key the hub publishes, and decrypts the
 * `aes128gcm` body (RFC 8291 / RFC 8188) with each device's own key pair and auth secret —
 * written here with node:crypto (ECDH, HKDF, AES-128-GCM), sharing no code with web-push.
 */
import { createDecipheriv, createECDH, createPublicKey, hkdfSync, randomBytes, verify, type ECDH } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface PushMessage {
  readonly device: string;
  readonly at: number;
  readonly headers: IncomingMessage['headers'];
  /** The decrypted payload, parsed as JSON. */
  readonly payload: Record<string, unknown>;
  /** The VAPID JWT's claims and the `k=` key, as verified. */
  readonly vapid: { readonly aud: string; readonly sub: string; readonly exp: number; readonly k: string };
}

export interface Device {
  readonly id: string;
  readonly endpoint: string;
  /** The body `PushSubscription.toJSON()` would give. */
  readonly subscription: { endpoint: string; expirationTime: null; keys: { p256dh: string; auth: string } };
  readonly received: PushMessage[];
  /** Answer every message with this status (e.g. 410 once the device unsubscribed); default 201. */
  status: number;
  /** Messages the hub sent this device, answered or not. */
  hits: number;
}

export class LoopbackPushService {
  readonly devices = new Map<string, Device & { readonly ecdh: ECDH; readonly authSecret: Buffer }>();
  /** Messages that failed a check (bad JWT, wrong key, undecryptable): a test asserts it stays empty. */
  readonly problems: string[] = [];
  #server: Server | undefined;
  #origin = '';
  /** The VAPID public key the hub's messages must be signed with (from `GET /api/push/key`). */
  expectedKey: string | undefined;

  static async start(): Promise<LoopbackPushService> {
    const svc = new LoopbackPushService();
    svc.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const status = svc.#take(req, Buffer.concat(chunks));
        res.writeHead(status);
        res.end();
      });
    });
    await new Promise<void>((resolve) => svc.#server!.listen(0, '127.0.0.1', resolve));
    svc.#origin = `http://127.0.0.1:${(svc.#server.address() as AddressInfo).port}`;
    return svc;
  }

  get origin(): string {
    return this.#origin;
  }

  /** A browser's subscription: a fresh P-256 key pair and auth secret, and an endpoint here. */
  device(name: string): Device {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    const authSecret = randomBytes(16);
    const id = `${name}-${randomBytes(4).toString('hex')}`;
    const endpoint = `${this.#origin}/push/${id}`;
    const d = {
      id,
      endpoint,
      ecdh,
      authSecret,
      received: [] as PushMessage[],
      status: 201,
      hits: 0,
      subscription: { endpoint, expirationTime: null, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: authSecret.toString('base64url') } },
    };
    this.devices.set(id, d);
    return d;
  }

  #take(req: IncomingMessage, body: Buffer): number {
    const id = /^\/push\/([^/]+)$/.exec(req.url ?? '')?.[1];
    const device = id ? this.devices.get(id) : undefined;
    if (!device || req.method !== 'POST') return 404;
    device.hits++;
    try {
      const vapid = this.#checkVapid(req.headers.authorization ?? '');
      if (req.headers['content-encoding'] !== 'aes128gcm') throw new Error(`Content-Encoding ${req.headers['content-encoding']}`);
      if (!req.headers['ttl']) throw new Error('no TTL header');
      const payload = JSON.parse(decryptAes128gcm(body, device.ecdh, device.authSecret).toString('utf8')) as Record<string, unknown>;
      if (device.status < 300) device.received.push({ device: device.id, at: Date.now(), headers: req.headers, payload, vapid });
    } catch (err) {
      this.problems.push(`${device.id}: ${err instanceof Error ? err.message : String(err)}`);
      return 400;
    }
    return device.status;
  }

  #checkVapid(header: string): PushMessage['vapid'] {
    const m = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(header);
    if (!m) throw new Error(`Authorization is not "vapid t=…, k=…": ${header.slice(0, 40)}`);
    const [, jwt, k] = m as unknown as [string, string, string];
    if (this.expectedKey !== undefined && k !== this.expectedKey) throw new Error("VAPID k= is not the hub's published key");
    const [h, p, s] = jwt.split('.');
    if (!h || !p || !s) throw new Error('malformed JWT');
    const header64 = JSON.parse(Buffer.from(h, 'base64url').toString()) as { alg?: string; typ?: string };
    if (header64.alg !== 'ES256') throw new Error(`JWT alg ${header64.alg}`);
    const raw = Buffer.from(k, 'base64url');
    if (raw.length !== 65 || raw[0] !== 4) throw new Error('k= is not an uncompressed P-256 point');
    const key = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: raw.subarray(1, 33).toString('base64url'), y: raw.subarray(33).toString('base64url') }, format: 'jwk' });
    if (!verify('sha256', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url'))) throw new Error('JWT signature does not verify');
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as { aud?: string; sub?: string; exp?: number };
    if (claims.aud !== this.#origin) throw new Error(`JWT aud ${claims.aud} is not ${this.#origin}`);
    const now = Date.now() / 1000;
    if (typeof claims.exp !== 'number' || claims.exp <= now || claims.exp > now + 24 * 3600 + 60) throw new Error(`JWT exp ${claims.exp} out of range`);
    if (typeof claims.sub !== 'string' || !/^(mailto:|https:)/.test(claims.sub)) throw new Error(`JWT sub ${claims.sub}`);
    return { aud: claims.aud, sub: claims.sub, exp: claims.exp, k };
  }

  async close(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }
}

/** RFC 8291 §3.4 + RFC 8188: the plaintext of an aes128gcm push message body for the device's keys. */
export function decryptAes128gcm(body: Buffer, ua: ECDH, authSecret: Buffer): Buffer {
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20]!;
  const asPublic = body.subarray(21, 21 + idlen);
  if (idlen !== 65) throw new Error(`keyid is ${idlen} bytes, not the 65-byte sender key`);
  const records = body.subarray(21 + idlen);
  const ecdhSecret = ua.computeSecret(asPublic);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), ua.getPublicKey(), asPublic]);
  const ikm = Buffer.from(hkdfSync('sha256', ecdhSecret, authSecret, keyInfo, 32));
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const baseNonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const out: Buffer[] = [];
  for (let i = 0, at = 0; at < records.length; i++, at += rs) {
    const record = records.subarray(at, Math.min(at + rs, records.length));
    const nonce = Buffer.from(baseNonce);
    nonce.writeUInt32BE((nonce.readUInt32BE(8) ^ i) >>> 0, 8);
    const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
    decipher.setAuthTag(record.subarray(record.length - 16));
    const plain = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
    let end = plain.length - 1;
    while (end >= 0 && plain[end] === 0) end--;
    const last = at + rs >= records.length;
    if (plain[end] !== (last ? 2 : 1)) throw new Error('bad padding delimiter');
    out.push(plain.subarray(0, end));
  }
  return Buffer.concat(out);
}
