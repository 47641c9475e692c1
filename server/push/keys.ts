/**
 * The hub's push keys: the VAPID pair (RFC 8292) push services check the hub's requests against,
 * and the key that signs notification-action tokens. Generated once and kept in the data dir as
 * `push-keys.json` (mode 0600); without a data dir they live as long as the process. In a
 * cluster every node must hold the same file (docs/notifications.md).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import webPush from 'web-push';
import { z } from 'zod';

export const PUSH_KEYS_FILE = 'push-keys.json';

export interface PushKeys {
  /** VAPID public key, base64url (the uncompressed P-256 point the browser's `applicationServerKey` takes). */
  readonly publicKey: string;
  readonly privateKey: string;
  /** HMAC-SHA256 key of the action tokens. */
  readonly tokenKey: Buffer;
}

const fileSchema = z.object({
  vapid: z.object({ publicKey: z.string().min(40).max(200), privateKey: z.string().min(20).max(200) }),
  tokenKey: z.string().min(40).max(200),
});

function generate(): PushKeys {
  const vapid = webPush.generateVAPIDKeys();
  return { publicKey: vapid.publicKey, privateKey: vapid.privateKey, tokenKey: randomBytes(32) };
}

/** The keys in `dir/push-keys.json`, made there first when absent; fresh ones each time without a dir. */
export function loadOrCreatePushKeys(dir: string | undefined): PushKeys {
  if (dir === undefined) return generate();
  const file = join(dir, PUSH_KEYS_FILE);
  if (existsSync(file)) {
    // Only the hub's user may read the keys: an older or copied file is tightened.
    if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
    let parsed: z.infer<typeof fileSchema>;
    try {
      parsed = fileSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
    } catch (err) {
      throw new Error(`${file} is not a push key file (${err instanceof Error ? err.message.split('\n')[0] : 'unreadable'}); move it away to make new keys (every subscribed device must then subscribe again)`);
    }
    return { publicKey: parsed.vapid.publicKey, privateKey: parsed.vapid.privateKey, tokenKey: Buffer.from(parsed.tokenKey, 'base64url') };
  }
  const keys = generate();
  const text = JSON.stringify({ vapid: { publicKey: keys.publicKey, privateKey: keys.privateKey }, tokenKey: keys.tokenKey.toString('base64url') }, null, 2);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text + '\n', { mode: 0o600 });
  renameSync(tmp, file);
  return keys;
}
