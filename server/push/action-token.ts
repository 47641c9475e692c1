/**
 * The capability a notification's Approve/Deny carries: the service worker has no bearer token,
 * so the payload holds a token that names exactly one answer the device may give — tenant, user,
 * subscription (the device), chat, request and expiry — signed with HMAC-SHA256 under the hub's
 * token key (`keys.ts`). Anything else is refused: a changed byte, another key, an expired one.
 * Single use is the answer's own: a request is answered once, first wins (`feature.ts`).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

export interface ActionClaims {
  readonly tenant: string;
  readonly user: string;
  /** The subscription (device) the notification went to. */
  readonly sub: string;
  readonly chat: string;
  readonly session: string;
  /** The interaction's request id (the interactions registry's). */
  readonly req: string;
  /** Expiry, ms since the epoch. */
  readonly exp: number;
}

const claimsSchema = z
  .object({
    tenant: z.string().max(256),
    user: z.string().max(256),
    sub: z.string().max(64),
    chat: z.string().max(2_048),
    session: z.string().max(2_048),
    req: z.string().max(1_024),
    exp: z.number().int(),
  })
  .strict();

/** How long an action token is good for (a notification answered a day later is stale). */
export const ACTION_TOKEN_TTL_MS = 24 * 60 * 60 * 1000;
/** Longest token accepted before anything is parsed. */
export const MAX_ACTION_TOKEN_CHARS = 8_192;

function mac(key: Buffer, body: string): Buffer {
  return createHmac('sha256', key).update(`ahp-push-action.${body}`).digest();
}

export function signActionToken(key: Buffer, claims: ActionClaims): string {
  const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${body}.${mac(key, body).toString('base64url')}`;
}

export type TokenCheck = { ok: true; claims: ActionClaims } | { ok: false; reason: 'invalid' | 'expired' };

/** The claims of a token this hub signed and that has not expired. */
export function verifyActionToken(key: Buffer, token: string, now: number): TokenCheck {
  if (token.length > MAX_ACTION_TOKEN_CHARS) return { ok: false, reason: 'invalid' };
  const dot = token.indexOf('.');
  if (dot <= 0 || dot !== token.lastIndexOf('.')) return { ok: false, reason: 'invalid' };
  const body = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1), 'base64url');
  const want = mac(key, body);
  if (given.length !== want.length || !timingSafeEqual(given, want)) return { ok: false, reason: 'invalid' };
  let claims: ActionClaims;
  try {
    claims = claimsSchema.parse(JSON.parse(Buffer.from(body, 'base64url').toString('utf8')));
  } catch {
    return { ok: false, reason: 'invalid' };
  }
  if (claims.exp <= now) return { ok: false, reason: 'expired' };
  return { ok: true, claims };
}
