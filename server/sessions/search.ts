/**
 * Search across a tenant's session titles and transcripts (user messages, agent text, tool steps,
 * answers), read through `HubPort.reader` so parked sessions stay parked. Bounded three ways: the
 * query's length, the number of results (one per turn at most; the caller asks for up to
 * `SEARCH_LIMITS.maxResults`), and the time it holds the event loop (it yields between batches of
 * sessions).
 */
import type { ChatState } from '../../shared/protocol/state.js';
import { answerInWords } from '../../shared/state/transcript.js';
import type { Principal } from '../auth/auth.js';
import type { SessionEntry } from '../hub/catalogue.js';
import type { SessionReader } from '../hub/queries.js';

export const SEARCH_LIMITS = {
  /** Characters in a query (after trimming). */
  maxQueryChars: 200,
  defaultResults: 20,
  maxResults: 100,
  /** Characters of context on each side of a match in a snippet. */
  snippetContext: 60,
  /** Sessions searched between two yields to the event loop. */
  sessionsPerSlice: 32,
} as const;

export type SearchField = 'title' | 'message' | 'agent' | 'tool' | 'answer';

export interface SearchResult {
  readonly session: string;
  readonly sessionTitle: string;
  readonly chat: string;
  readonly chatTitle: string;
  /** Absent for a match in the session's title. */
  readonly turnId?: string;
  readonly field: SearchField;
  readonly snippet: string;
  /** Where the match is in `snippet` (UTF-16 offsets), for highlighting. */
  readonly match: { readonly start: number; readonly length: number };
}

export interface SearchAnswer {
  readonly query: string;
  readonly results: readonly SearchResult[];
  /** True when more turns matched than `limit`: narrow the query to see the rest. */
  readonly truncated: boolean;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function snippetAt(text: string, index: number, length: number): { snippet: string; match: { start: number; length: number } } {
  const from = Math.max(0, index - SEARCH_LIMITS.snippetContext);
  const to = Math.min(text.length, index + length + SEARCH_LIMITS.snippetContext);
  const lead = from > 0 ? '…' : '';
  // Line breaks become spaces one for one, so the match's offsets stay true.
  const body = text.slice(from, to).replace(/\s/g, ' ');
  return { snippet: `${lead}${body}${to < text.length ? '…' : ''}`, match: { start: lead.length + index - from, length } };
}

/** The searchable texts of one turn, in the order the transcript shows them. */
function* turnTexts(turn: ChatState['turns'][number] | NonNullable<ChatState['activeTurn']>): Generator<[SearchField, string]> {
  yield ['message', turn.message.text];
  for (const part of turn.responseParts) {
    const p = part as { kind: string; content?: unknown; toolCall?: { toolName?: string; displayName?: string; invocationMessage?: unknown }; request?: { message?: string; questions?: unknown[]; answers?: Record<string, unknown> } };
    if (part.kind === 'markdown' && typeof p.content === 'string') yield ['agent', p.content];
    else if (part.kind === 'toolCall' && p.toolCall) {
      yield ['tool', [p.toolCall.displayName || p.toolCall.toolName, typeof p.toolCall.invocationMessage === 'string' ? p.toolCall.invocationMessage : ''].filter(Boolean).join(' — ')];
    } else if (part.kind === 'inputRequest' && p.request) {
      const questions = (p.request.questions ?? []) as Array<{ id: string }>;
      const answers = questions.map((q) => answerInWords(p.request!.answers?.[q.id] as never, q as never)).filter((a) => a !== '—');
      yield ['answer', [p.request.message ?? '', ...answers].filter(Boolean).join(' · ')];
    }
  }
}

export async function searchSessions(reader: SessionReader, principal: Principal, query: string, limit: number): Promise<SearchAnswer> {
  const pattern = new RegExp(escapeRegExp(query), 'iu');
  const results: SearchResult[] = [];
  const sessions = reader.sessions(principal);
  const full = (): boolean => results.length > limit;
  for (let i = 0; i < sessions.length && !full(); i++) {
    if (i > 0 && i % SEARCH_LIMITS.sessionsPerSlice === 0) await new Promise((resolve) => setImmediate(resolve));
    searchSession(reader, sessions[i]!, pattern, results, limit);
  }
  return { query, results: results.slice(0, limit), truncated: results.length > limit };
}

function searchSession(reader: SessionReader, session: SessionEntry, pattern: RegExp, results: SearchResult[], limit: number): void {
  let chats: ReturnType<SessionReader['chatsOf']>;
  try {
    chats = reader.chatsOf(session);
  } catch {
    // A parked session whose cache cannot be read: the hub was told; its title still matches.
    chats = [];
  }
  const sessionTitle = session.state.title;
  const titleHit = pattern.exec(sessionTitle);
  const first = chats.find((c) => c.uri === session.state.defaultChat) ?? chats[0];
  if (titleHit && first) results.push({ session: session.uri, sessionTitle, chat: first.uri, chatTitle: first.state.title, field: 'title', ...snippetAt(sessionTitle, titleHit.index, titleHit[0].length) });
  for (const chat of chats) {
    const turns = chat.state.activeTurn ? [...chat.state.turns, chat.state.activeTurn] : chat.state.turns;
    for (const turn of turns) {
      if (results.length > limit) return;
      for (const [field, text] of turnTexts(turn)) {
        const hit = pattern.exec(text);
        if (!hit) continue;
        results.push({ session: session.uri, sessionTitle, chat: chat.uri, chatTitle: chat.state.title, turnId: turn.id, field, ...snippetAt(text, hit.index, hit[0].length) });
        break;
      }
    }
  }
}
