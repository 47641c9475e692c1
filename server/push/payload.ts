/**
 * Builds the push payload (its wire shape: shared/protocol/push-payload.ts), the JSON the service
 * worker (app/sw.ts) reads; its field names are a contract (docs/notifications.md#payload).
 */
import { PUSH_PAYLOAD_VERSION, type PushButton, type PushPayload } from '../../shared/protocol/push-payload.js';
import { sessionIdOf } from '../../shared/protocol/uris.js';

export const APPROVE_DENY: readonly PushButton[] = [
  { action: 'approve', title: 'Approve' },
  { action: 'deny', title: 'Deny' },
];

/** What a notification is about: the newest open request of a chat, and how many are open. */
export interface RequestFacts {
  readonly session: string;
  readonly sessionTitle: string | undefined;
  readonly chat: string;
  readonly requestId: string;
  /** The AHP id the app links to: the input request's id or the tool call's id. */
  readonly anchor: string;
  readonly requestKind: 'permission' | 'question';
  readonly tool?: string | undefined;
  /** The question asked, or what the tool does. */
  readonly text: string | undefined;
  /** Open requests of the chat, this one included. */
  readonly open: number;
}

export function tagOf(chat: string): string {
  return `chat:${chat}`;
}

/** The app's link to the chat at the form (app/turn-links.ts: `/s/<session>?chat=<uri>#input=<id>`). */
export function appUrlOf(session: string, chat: string, anchor: string): string {
  return `/s/${encodeURIComponent(sessionIdOf(session))}?chat=${encodeURIComponent(chat)}#input=${encodeURIComponent(anchor)}`;
}

function clip(text: string, max: number): string {
  return text.length > max ? text.slice(0, max - 1) + '…' : text;
}

function sessionName(f: Pick<RequestFacts, 'session' | 'sessionTitle'>): string {
  return clip(f.sessionTitle?.trim() || sessionIdOf(f.session), 120);
}

/** The "someone is needed" notification; `actions` only for a person who may answer a tool permission. */
export function requestPayload(f: RequestFacts, withActions: boolean, actionToken: string | undefined): PushPayload {
  const what = f.requestKind === 'permission' ? `Allow ${f.tool ?? 'a tool'}${f.text && f.text !== f.tool ? `: ${f.text}` : ''}?` : (f.text ?? 'A question for you');
  const more = f.open > 1 ? ` (+${f.open - 1} more waiting)` : '';
  const actions = withActions && f.requestKind === 'permission' ? APPROVE_DENY : [];
  return {
    v: PUSH_PAYLOAD_VERSION,
    kind: 'request',
    tag: tagOf(f.chat),
    title: sessionName(f),
    body: clip(what, 300) + more,
    url: appUrlOf(f.session, f.chat, f.anchor),
    session: f.session,
    chat: f.chat,
    requestId: f.requestId,
    requestKind: f.requestKind,
    ...(f.tool !== undefined ? { tool: f.tool } : {}),
    actions,
    ...(actions.length > 0 && actionToken !== undefined ? { actionToken } : {}),
  };
}

/** The withdrawal: same tag, nothing to answer any more. */
export function resolvedPayload(f: Omit<RequestFacts, 'open' | 'text'>): PushPayload {
  return {
    v: PUSH_PAYLOAD_VERSION,
    kind: 'resolved',
    tag: tagOf(f.chat),
    title: sessionName(f),
    body: 'Answered',
    url: appUrlOf(f.session, f.chat, f.anchor),
    session: f.session,
    chat: f.chat,
    requestId: f.requestId,
    requestKind: f.requestKind,
    ...(f.tool !== undefined ? { tool: f.tool } : {}),
    actions: [],
  };
}

/**
 * The largest payload one push message carries: a push service takes at most 4,096 bytes of
 * body (RFC 8030 §7.2), and aes128gcm adds an 86-byte header, a 16-byte tag and a delimiter.
 */
export const MAX_PUSH_PAYLOAD_BYTES = 3_993;

/** The payload as JSON text within `MAX_PUSH_PAYLOAD_BYTES`: title and body shortened if need be; undefined if it still does not fit. */
export function payloadText(payload: PushPayload): string | undefined {
  const fits = (p: PushPayload): string | undefined => {
    const text = JSON.stringify(p);
    return Buffer.byteLength(text) <= MAX_PUSH_PAYLOAD_BYTES ? text : undefined;
  };
  return fits(payload) ?? fits({ ...payload, title: clip(payload.title, 40), body: clip(payload.body, 80) });
}
