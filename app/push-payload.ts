/**
 * The hub's Web Push payload, read by the service worker (app/sw.ts). The hub sends JSON:
 * `{ v: 1, kind: "request" | "resolved", tag: "chat:<chat uri>", title, body, url, session, chat,
 * requestId, requestKind: "permission" | "question", tool?, actions: [{action, title}],
 * actionToken? }` (the wire shape: shared/protocol/push-payload.ts; docs/app.md, "Install and
 * notifications"). Plain checks, no zod: the worker bundle stays a few kilobytes. It imports only
 * types, so it type-checks with the DOM and the worker libs.
 */
import type { PushActionName, PushButton, PushRequestFields } from '../shared/protocol/push-payload.js';

/** The notification buttons the worker knows how to answer (POST /api/push/actions). */
export type PushAction = PushActionName;

/** A request push as the worker keeps it: the wire fields, with absent ones made explicit. */
export interface PushRequest extends PushRequestFields {
  readonly kind: 'request';
  readonly tool: string | undefined;
  readonly actions: readonly PushButton[];
  readonly actionToken: string | undefined;
}

export interface PushResolved {
  readonly kind: 'resolved';
  readonly tag: string;
  /** The request it withdraws; a notification of a newer request under the same tag stays. */
  readonly requestId?: string;
}

export type PushPayload = PushRequest | PushResolved;

/** What a notification keeps in its `data`, for the click handler. */
export interface NotificationData {
  readonly url: string;
  readonly actionToken: string | undefined;
  /** The request shown, so a late withdrawal of an older one of the chat leaves it standing. */
  readonly requestId?: string | undefined;
}

/** A push service allows ~4 KB; anything much larger is not from the hub. */
const MAX_PAYLOAD_CHARS = 16_384;
/** Browsers show at most two action buttons (Chromium's `Notification.maxActions`). */
const MAX_ACTIONS = 2;

export type ParsedPush = { ok: true; payload: PushPayload } | { ok: false; reason: string };

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function parsePushPayload(text: string | undefined): ParsedPush {
  if (text === undefined || text === '') return { ok: false, reason: 'the push carried no data' };
  if (text.length > MAX_PAYLOAD_CHARS) return { ok: false, reason: `the push data is ${text.length} characters, over ${MAX_PAYLOAD_CHARS}` };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'the push data is not JSON' };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { ok: false, reason: 'the push data is not a JSON object' };
  const o = raw as Record<string, unknown>;
  if (o['v'] !== 1) return { ok: false, reason: `unknown payload version ${JSON.stringify(o['v'])} (expected 1)` };
  const tag = str(o['tag']);
  if (!tag) return { ok: false, reason: 'the push data has no tag' };
  if (o['kind'] === 'resolved') {
    const requestId = str(o['requestId']);
    return { ok: true, payload: { kind: 'resolved', tag, ...(requestId ? { requestId } : {}) } };
  }
  if (o['kind'] !== 'request') return { ok: false, reason: `unknown kind ${JSON.stringify(o['kind'])}` };
  const title = str(o['title']);
  const url = str(o['url']);
  if (!title || !url) return { ok: false, reason: 'a request push needs a title and a url' };
  const actions = Array.isArray(o['actions'])
    ? o['actions']
        .filter((a): a is { action: PushAction; title: string } => typeof a === 'object' && a !== null && (a.action === 'approve' || a.action === 'deny') && typeof a.title === 'string' && a.title !== '')
        .slice(0, MAX_ACTIONS)
        .map((a) => ({ action: a.action, title: a.title }))
    : [];
  const actionToken = str(o['actionToken']);
  return {
    ok: true,
    payload: {
      kind: 'request',
      tag,
      title,
      body: str(o['body']) ?? '',
      url,
      session: str(o['session']) ?? '',
      chat: str(o['chat']) ?? '',
      requestId: str(o['requestId']) ?? '',
      requestKind: o['requestKind'] === 'question' ? 'question' : 'permission',
      tool: str(o['tool']),
      // Buttons without a token could only fail: a viewer's or a question's push has none.
      actions: actionToken ? actions : [],
      actionToken,
    },
  };
}

/**
 * The same-origin path a notification click opens: the payload's `url` when it is of this
 * origin, else the dashboard (a push never sends the browser elsewhere).
 */
export function clickTarget(url: string | undefined, origin: string): string {
  if (!url) return `${origin}/`;
  try {
    const u = new URL(url, origin);
    return u.origin === origin ? u.href : `${origin}/`;
  } catch {
    return `${origin}/`;
  }
}

/** The app's client-side routes, which all serve the one page (server/transport/static-files.ts). */
export function isAppRoute(pathname: string): boolean {
  return pathname === '/' || /^\/s\/[^/]+\/?$/.test(pathname);
}
