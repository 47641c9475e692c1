/**
 * Pure helpers of a conformance case run (runner.ts): polling with a deadline, matching frames
 * against a case's patterns, counting an operation's witnesses in a state, JSON comparison.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Actor, Operation } from './actor.js';
import type { FrameMatch } from './case-format.js';
import type { Frame } from './fault-proxy.js';

const DEADLINE_MS = 10_000;

/** Polls `check` until it returns something other than undefined/false, or throws at the deadline. */
export async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = DEADLINE_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function draftAction(requestId: string, questionId: string, text: string): Record<string, unknown> {
  return { type: 'chat/inputAnswerChanged', requestId, questionId, answer: { state: 'draft', value: { kind: 'text', value: text } } };
}

/** A draft a later accepted action on the same request replaced (drafts are last-writer-wins). */
export function supersededDraft(op: Operation, all: Array<{ op: Operation }>): boolean {
  if (op.action['type'] !== 'chat/inputAnswerChanged') return false;
  return all.some(({ op: o }) => o !== op && o.status === 'accepted' && o.channel === op.channel && o.action['requestId'] === op.action['requestId'] && (o.serverSeq ?? 0) > (op.serverSeq ?? 0));
}

export const isSayMarker = (s: unknown): boolean => typeof s === 'object' && s !== null && (s as { say?: unknown }).say === '$marker';

export function defaultChatOf(state: unknown): string | undefined {
  const s = state as { defaultChat?: unknown; chats?: Array<{ resource?: unknown }> };
  if (typeof s.defaultChat === 'string') return s.defaultChat;
  const first = s.chats?.[0]?.resource;
  return typeof first === 'string' ? first : undefined;
}

/** How often an operation's effect is in a channel state: turns by their message, answers by their value. */
export function countWitnesses(state: unknown, op: Operation, marker: string): number {
  const chat = state as { turns?: Array<{ message?: { text?: string } }>; activeTurn?: { message?: { text?: string } } } | undefined;
  if (!chat) return 0;
  const type = op.action['type'];
  if (type === 'chat/turnStarted') return [...(chat.turns ?? []), ...(chat.activeTurn ? [chat.activeTurn] : [])].filter((t) => t.message?.text?.includes(marker)).length;
  // Answers and drafts: in the input request's part (the agent may quote the answer elsewhere).
  const requestId = op.action['requestId'];
  const parts = [...(chat.turns ?? []), ...(chat.activeTurn ? [chat.activeTurn] : [])].flatMap((t) => (t as { responseParts?: unknown[] }).responseParts ?? []);
  const requests = parts.filter((p) => (p as { kind?: string; request?: { id?: string } }).kind === 'inputRequest' && (p as { request?: { id?: string } }).request?.id === requestId);
  return requests.reduce<number>((n, p) => n + JSON.stringify(p).split(marker).length - 1, 0);
}

export function frameMatches(f: Frame, m: FrameMatch, actor: Actor): boolean {
  const j = f.json;
  if (!j) return false;
  if (m.method !== undefined && j['method'] !== m.method) return false;
  const params = j['params'] as Record<string, unknown> | undefined;
  if (m.op !== undefined) {
    const op = actor.operation(m.op);
    if (!op || j['method'] !== 'dispatchAction' || params?.['clientSeq'] !== op.clientSeq) return false;
  }
  if (m.echoOf !== undefined) {
    const op = actor.operation(m.echoOf);
    const origin = params?.['origin'] as { clientId?: string; clientSeq?: number } | undefined;
    if (!op || j['method'] !== 'action' || origin?.clientId !== actor.clientId || origin.clientSeq !== op.clientSeq) return false;
  }
  if (m.resultHas !== undefined && !(typeof j['result'] === 'object' && j['result'] !== null && m.resultHas in (j['result'] as object))) return false;
  if (m.envelope && j['method'] !== 'action') return false;
  if (m.actionType !== undefined && (params?.['action'] as { type?: string } | undefined)?.type !== m.actionType) return false;
  return true;
}

export function describeMatch(m: FrameMatch): string {
  return Object.entries(m)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(',');
}

/** Equal as JSON values (what the wire carries: an `undefined` field and an absent one are the same). */
export function sameJson(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(asJson(a), asJson(b));
}

export const asJson = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

/** The path of the first difference between two JSON values, for a readable violation. */
export function firstDifference(a: unknown, b: unknown, path = '$'): string {
  if (isDeepStrictEqual(a, b)) return 'none';
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return `${path}: ${JSON.stringify(a)?.slice(0, 120)} ≠ ${JSON.stringify(b)?.slice(0, 120)}`;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    const x = (a as Record<string, unknown>)[k];
    const y = (b as Record<string, unknown>)[k];
    if (!isDeepStrictEqual(x, y)) return firstDifference(x, y, `${path}.${k}`);
  }
  return `${path}: ${JSON.stringify(a).slice(0, 200)} ≠ ${JSON.stringify(b).slice(0, 200)}`;
}
