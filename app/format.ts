/** Status labels, relative times and other small display helpers. */
import type { AnsweredBy } from '../shared/state/answered-by.js';
import { SessionStatus, activityOf, hasBit, type Turn } from '../shared/protocol/state.js';

export type StatusLabel = 'Idle' | 'In progress' | 'Needs input' | 'Error';

export function statusLabel(status: number): StatusLabel {
  const activity = activityOf(status);
  if (activity === SessionStatus.Error) return 'Error';
  if (hasBit(activity, 16)) return 'Needs input';
  if (hasBit(activity, 8)) return 'In progress';
  return 'Idle';
}

export function statusClass(label: StatusLabel): string {
  return 'status status-' + label.toLowerCase().replace(/\s+/g, '-');
}

export function relativeTime(iso: string | undefined, now = Date.now()): string {
  if (!iso) return '';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.round((now - t) / 1000);
  if (s < 10) return 'just now';
  if (s < 60) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 24) return `${h} h ago`;
  return new Date(t).toLocaleDateString();
}

export { sessionIdOf } from '../shared/protocol/uris.js';

/** A session id as people read it: a chosen id in full; a generated UUID by its first 8 characters. */
export function shortSessionId(id: string): string {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id) ? id.slice(0, 8) : id;
}

export function newId(): string {
  return crypto.randomUUID();
}

/**
 * Presence colours: sixteen hues far enough apart to tell people apart, each dark enough for white
 * chip text (contrast ≥ 4.5:1, WCAG AA).
 */
export const PRESENCE_COLORS = ['#1f5fbf', '#b3261e', '#17653a', '#7b3fb0', '#a04600', '#0b6670', '#b0216e', '#4d5b12', '#3b4cc0', '#8a3a00', '#5a4a9e', '#1a6b4f', '#9c2c4d', '#2f5f7a', '#6b4f00', '#6a3d7a'] as const;

/** A stable colour for a person (presence chips, carets): the same name gets the same colour in every tab. */
export function colorFor(name: string): string {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619) >>> 0;
  return PRESENCE_COLORS[h % PRESENCE_COLORS.length]!;
}

/**
 * A session title as people read it. Sessions started from the CLI or over HTTP may be titled
 * with the prompt itself — sometimes a JSON demo script — so show its first meaningful line.
 */
export function displayTitle(title: string | undefined, fallback = 'Untitled session'): string {
  const raw = (title ?? '').trim();
  if (!raw) return fallback;
  let text = raw;
  if (raw.startsWith('{') || raw.startsWith('[')) {
    try {
      const parsed = JSON.parse(raw) as unknown;
      text = titleFromJson(parsed) ?? raw;
    } catch {
      // A title cut short (the CLI titles a session with the prompt's first 80 characters) is no
      // longer JSON: still show a demo script as one, by its first "say" when there is one.
      if (/^\{\s*"script"/.test(raw)) {
        const said = /"say"\s*:\s*"((?:[^"\\]|\\.)*)/.exec(raw)?.[1];
        text = said ? `Script: ${said.replace(/\\(.)/g, '$1')}` : 'Demo-agent script';
      }
    }
  }
  const line =
    text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .find((l) => l !== '') ?? fallback;
  return line.length > 80 ? line.slice(0, 79) + '…' : line;
}

function titleFromJson(parsed: unknown): string | undefined {
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const obj = parsed as Record<string, unknown>;
  if (Array.isArray(obj['script'])) {
    const steps = obj['script'] as Array<Record<string, unknown>>;
    const said = steps.find((s) => typeof s?.['say'] === 'string')?.['say'] as string | undefined;
    return said ? `Script: ${said}` : `Demo-agent script (${steps.length} step${steps.length === 1 ? '' : 's'})`;
  }
  for (const key of ['title', 'text', 'prompt', 'message']) if (typeof obj[key] === 'string' && obj[key]) return obj[key] as string;
  return undefined;
}

/** What a failed turn means for a person, and what they can do next. */
export function errorInWords(errorType: string | undefined, message: string | undefined): string {
  const detail = (message ?? '').trim();
  switch (errorType) {
    case 'hubRestarted':
      return 'The hub restarted while the agent was working, so this turn was stopped.';
    case 'invalidScript':
      return `The demo agent could not read this script${detail ? `: ${detail}` : ''}.`;
    case 'scriptFailure':
      return `The agent stopped with an error${detail ? `: “${detail}”` : ''}.`;
    case 'refusal':
      return `The agent declined this request${detail ? `: “${detail}”` : ''}.`;
    case 'modelUnreachable':
    case 'agentStartFailed':
      // The hub's message already says it in words, with the agent's own cause (docs/agents.md).
      return detail || 'The agent could not be started.';
    case 'agentUnavailable':
    case 'providerUnavailable':
      return `The agent could not be reached${detail ? ` (${detail})` : ''}.`;
    default:
      return `The agent stopped with an error${detail ? `: “${detail}”` : ''}.`;
  }
}

/** The hub's record of who answered (`_meta["hub/answeredBy"]`), if any: the one reader, in shared/. */
export { answeredByIn as answeredByOf } from '../shared/state/answered-by.js';
export type { AnsweredBy };

/** The user the hub names for every action in dev mode (no tokens: one local person). */
export const DEV_USER = 'dev';

/**
 * A stamped user as people read it: the hub's own principals are "the hub", and in dev mode the
 * one local user is "you" (every tab there is the same person, whatever its presence name).
 */
export function personName(user: string, devMode: boolean): string {
  if (user.startsWith('hub:')) return 'the hub';
  return devMode && user === DEV_USER ? 'you' : user;
}

/** "alice · in the app · 10:42" — who, from where, when. */
export function answeredByText(by: AnsweredBy, devMode = false): string {
  const when = Number.isNaN(Date.parse(by.at)) ? '' : new Date(by.at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  const where = by.surface === 'app' ? 'in the app' : by.surface === 'remembered choice' ? 'by a remembered "always" choice' : `via ${by.surface}`;
  const who = personName(by.user, devMode);
  return [who, where, when].filter(Boolean).join(' · ');
}

/** Marks an answer or approval as sent from this app (the hub adds the signed-in user and time). */
export const FROM_APP_META = { 'hub/client': 'app' } as const;

/** A steering receipt in words: a short badge and, when it was not used, why. Codes never show. */
export function receiptInWords(state: string, reason: string | undefined): { badge: string; why: string | undefined } {
  const badge = state === 'accepted' ? 'waiting for the agent' : state === 'consumed' ? 'read by the agent' : state === 'closed' || state === 'cancelled' ? 'not used' : state;
  const WHY: Record<string, string> = {
    turn_completed: 'the turn finished before the agent read it',
    turn_failed: 'the turn failed before the agent read it',
    turn_cancelled: 'the turn was stopped before the agent read it',
    turn_ended: 'the turn ended before the agent read it',
    history_replaced: 'the chat history was replaced',
    removed_by_client: 'you removed it',
    removed: 'it was removed',
  };
  return { badge, why: reason === undefined ? undefined : WHY[reason] };
}

/** "alice denied this first" — what the loser of an approve/deny race reads. */
export function wonRaceText(by: AnsweredBy | undefined, approved: boolean, option: string | undefined, devMode = false): string {
  const name = by ? personName(by.user, devMode) : 'someone else';
  const who = name === 'the hub' || name === 'you' || name === 'someone else' ? name[0]!.toUpperCase() + name.slice(1) : name;
  const how = by?.surface === 'remembered choice' ? ' (a remembered "always" choice)' : '';
  return `${who} ${approved ? 'approved' : 'denied'} this first${option ? ` (${option})` : ''}${how}.`;
}

/** When a turn ended ("Completed … ago" counts from the end, not the start). */
export function endedAt(t: Turn): string | undefined {
  const start = Date.parse(t.startedAt ?? '');
  if (Number.isNaN(start)) return undefined;
  return new Date(start + (typeof t.duration === 'number' ? t.duration : 0)).toISOString();
}

/** The steering input id a pending steering message carries in its `_meta`, else its own id. */
export function inputIdOf(p: { id: string; message: { _meta?: Record<string, unknown> } }): string {
  for (const v of Object.values(p.message._meta ?? {})) {
    const id = (v as { inputId?: unknown } | null)?.inputId;
    if (typeof id === 'string') return id;
  }
  return p.id;
}

/** The session-level IsArchived flag (bit 64) of a status bitset. */
export function isArchived(status: number): boolean {
  return hasBit(status, SessionStatus.IsArchived);
}

/**
 * Whether a session waits for someone and should be pointed at (the tab title's count, "Next chat
 * that needs input"): it needs input and nobody archived it as done with.
 */
export function awaitsSomeone(status: number): boolean {
  return statusLabel(status) === 'Needs input' && !isArchived(status);
}
