/**
 * Sends one push message: `web-push` encrypts it (RFC 8291 aes128gcm) and signs the VAPID JWT
 * (RFC 8292); the request itself goes out through `fetch`, which also speaks plain http to a
 * loopback push service (web-push's own sender only does https).
 */
import { createHash } from 'node:crypto';
import webPush from 'web-push';
import type { PushKeys } from './keys.js';

export type SendResult = { readonly kind: 'sent' } | { readonly kind: 'gone'; readonly status: number } | { readonly kind: 'failed'; readonly status?: number; readonly message: string };

export interface PushTarget {
  readonly endpoint: string;
  readonly p256dh: string;
  readonly auth: string;
}

export type PushSender = (target: PushTarget, payload: string, topic: string) => Promise<SendResult>;

/** The `Topic` header: the push service keeps only the newest undelivered message of a topic (≤ 32 base64url chars). */
export function topicOf(tenant: string, chat: string): string {
  return createHash('sha256').update(`${tenant}\n${chat}`).digest().subarray(0, 24).toString('base64url');
}

export function webPushSender(keys: PushKeys, subject: string, timeoutMs = 10_000): PushSender {
  return async (target, payload, topic) => {
    let details: ReturnType<typeof webPush.generateRequestDetails>;
    try {
      details = webPush.generateRequestDetails({ endpoint: target.endpoint, keys: { p256dh: target.p256dh, auth: target.auth } }, payload, {
        vapidDetails: { subject, publicKey: keys.publicKey, privateKey: keys.privateKey },
        TTL: 24 * 60 * 60,
        urgency: 'high',
        topic,
      });
    } catch (err) {
      return { kind: 'failed', message: `cannot encrypt for this subscription: ${err instanceof Error ? err.message : String(err)}` };
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(details.headers)) headers[name] = String(value);
    try {
      const res = await fetch(details.endpoint, { method: 'POST', headers, body: details.body ?? undefined, signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
      await res.arrayBuffer().catch(() => undefined);
      if (res.status === 404 || res.status === 410) return { kind: 'gone', status: res.status };
      if (res.status >= 200 && res.status < 300) return { kind: 'sent' };
      return { kind: 'failed', status: res.status, message: `push service answered ${res.status}` };
    } catch (err) {
      return { kind: 'failed', message: err instanceof Error ? err.message : String(err) };
    }
  };
}
