/**
 * The root catalogue as root subscribers see it: for each session, the summary last published
 * (`rollup.ts` computes it), so only changes go out. Every change is queued through the commit
 * pipeline (`root/sessionAdded`, `root/sessionRemoved`, `root/sessionSummaryChanged`), in order
 * with the envelopes that caused it, and only to the session's tenant.
 */
import { ServerNotification } from '../../shared/protocol/messages.js';
import { ROOT_URI } from '../../shared/protocol/uris.js';
import type { HubState, SessionEntry } from './catalog.js';
import type { CommitPipeline } from './commit-pipeline.js';
import { sessionSummary, summaryChanges, type SessionSummaryView } from './rollup.js';

export class RootCatalogue {
  readonly #published = new Map<string, SessionSummaryView>();

  constructor(
    private readonly state: HubState,
    private readonly pipeline: Pick<CommitPipeline, 'sendRoot'>,
  ) {}

  /** After recovery: nothing is sent; root subscribers of this process start from `listSessions`. */
  publishedFromState(): void {
    for (const s of this.state.sessions.values()) this.#published.set(s.uri, sessionSummary(s, this.state));
  }

  sessionAdded(session: SessionEntry): void {
    const summary = sessionSummary(session, this.state);
    this.#published.set(session.uri, summary);
    this.pipeline.sendRoot(session.tenant, ServerNotification.SessionAdded, { channel: ROOT_URI, summary });
  }

  sessionRemoved(session: { readonly uri: string; readonly tenant: string }): void {
    this.#published.delete(session.uri);
    this.pipeline.sendRoot(session.tenant, ServerNotification.SessionRemoved, { channel: ROOT_URI, session: session.uri });
  }

  /** Publishes the session's summary (with its aggregate status) when it changed. */
  sessionChanged(session: SessionEntry): void {
    const next = sessionSummary(session, this.state);
    const prev = this.#published.get(session.uri);
    const changes = prev ? summaryChanges(prev, next) : next;
    if (changes) {
      this.#published.set(session.uri, next);
      this.pipeline.sendRoot(session.tenant, ServerNotification.SessionSummaryChanged, { channel: ROOT_URI, session: session.uri, changes });
    }
  }
}
