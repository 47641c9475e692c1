/**
 * Sessions a team can manage, over HTTP (same bearer auth and tenant scoping as every route):
 *
 *   GET /v2/search?q=<text>&limit=<n>   → 200 {query, results: [{session, sessionTitle, chat, chatTitle, turnId?, field, snippet, match}], truncated}
 *       400 search_query_empty | search_query_too_long | search_limit_invalid
 *   GET /v2/sessions/{sessionId}/export?format=markdown|json&chat=<uri>
 *       → 200 text/markdown (the transcript's text) or application/json (the same entries, structured)
 *       400 export_format_invalid, 404 session_not_found | not_found (a chat not of this session)
 *
 * Renaming, archiving and deleting are AHP on the WebSocket (`session/titleChanged`,
 * `session/isArchivedChanged`, `disposeSession`); see docs/protocol.md.
 */
import { sessionUri } from '../../shared/protocol/uris.js';
import { transcriptMarkdown, transcriptOf } from '../../shared/state/transcript.js';
import type { Feature, FeatureContext } from '../feature-contract.js';
import { ProtocolError, sendJson, startOk } from '../transport/http-router.js';
import { SEARCH_LIMITS, searchSessions } from './search.js';

function parseLimit(raw: string | null): number {
  if (raw === null) return SEARCH_LIMITS.defaultResults;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > SEARCH_LIMITS.maxResults) {
    throw new ProtocolError('search_limit_invalid', `limit must be a whole number from 1 to ${SEARCH_LIMITS.maxResults}`);
  }
  return n;
}

function parseQuery(raw: string | null): string {
  const q = (raw ?? '').trim();
  if (q === '') throw new ProtocolError('search_query_empty', 'q is required: the text to search for in session titles and transcripts');
  if (q.length > SEARCH_LIMITS.maxQueryChars) throw new ProtocolError('search_query_too_long', `q is ${q.length} characters; at most ${SEARCH_LIMITS.maxQueryChars}`);
  return q;
}

export const sessionsFeature: Feature = {
  name: 'sessions',
  install(ctx: FeatureContext) {
    const { hub, http } = ctx;

    http.add('GET', '/v2/search', async (_req, res, c) => {
      const query = parseQuery(c.url.searchParams.get('q'));
      const limit = parseLimit(c.url.searchParams.get('limit'));
      sendJson(res, await searchSessions(hub.reader, c.principal, query, limit));
    });

    http.add('GET', '/v2/sessions/{sessionId}/export', (_req, res, c) => {
      const uri = sessionUri(c.params['sessionId']!);
      const session = hub.visibleSession(c.principal, uri);
      if (!session) throw new ProtocolError('session_not_found', `no session ${c.params['sessionId']}`);
      const format = c.url.searchParams.get('format') ?? 'markdown';
      if (format !== 'markdown' && format !== 'json') throw new ProtocolError('export_format_invalid', 'format must be markdown or json');
      const wanted = c.url.searchParams.get('chat') ?? hub.defaultChatOf(uri);
      const chat = hub.reader.chatsOf(session).find((e) => e.uri === wanted);
      if (!chat) throw new ProtocolError('not_found', `no chat ${wanted ?? '(none)'} in this session`);
      const transcript = transcriptOf(chat.state, { uri, title: session.state.title }, new Date(ctx.now()).toISOString());
      if (format === 'json') return sendJson(res, transcript);
      startOk(res, { 'content-type': 'text/markdown; charset=utf-8', 'cache-control': 'no-store' });
      res.end(transcriptMarkdown(transcript));
    });
  },
};
