/**
 * The root catalogue as root subscribers see it: for each session, the summary last published
 * (`rollup.ts` computes it), so only changes go out. Every change is queued through the commit
 * pipeline (`root/sessionAdded`, `root/sessionRemoved`, `root/sessionSummaryChanged`), in order
 * with the envelopes that caused it, and only to the session's tenant.
 *
 * Changes are coalesced per event-loop turn: a summary carries the session's whole
 * `hub/inputNeeded` brief list, so publishing one per commit while a burst of 3,000 permission
 * requests is open sent millions of briefs (issue 18.7). A changed session is published once, in
 * the check phase of the turn that changed it, after every envelope of that turn.
 */
import { ServerNotification } from '../../shared/protocol/messages.js';
import { ROOT_URI } from '../../shared/protocol/uris.js';
import type { HubState, SessionEntry } from './catalogue.js';
import type { CommitPipeline } from './commit-pipeline.js';
import { sessionSummary, summaryChanges, type SessionSummaryView } from './rollup.js';

export class RootCatalogue {
  readonly #published = new Map<string, SessionSummaryView>();
  /** Sessions changed this turn, published once at its end. */
  readonly #changed = new Map<string, SessionEntry>();
  #publishScheduled = false;

  constructor(
    private readonly state: HubState,
    private readonly pipeline: Pick<CommitPipeline, 'sendRoot'>,
  ) {}

  /** After recovery: nothing is sent; root subscribers of this process start from `listSessions`. */
  publishedFromState(): void {
    for (const s of this.state.sessions.values()) this.#published.set(s.uri, sessionSummary(s, this.state));
  }

  sessionAdded(session: SessionEntry): void {
    this.#changed.delete(session.uri);
    const summary = sessionSummary(session, this.state);
    this.#published.set(session.uri, summary);
    this.pipeline.sendRoot(session.tenant, ServerNotification.SessionAdded, { channel: ROOT_URI, summary });
  }

  sessionRemoved(session: { readonly uri: string; readonly tenant: string }): void {
    this.#changed.delete(session.uri);
    this.#published.delete(session.uri);
    this.pipeline.sendRoot(session.tenant, ServerNotification.SessionRemoved, { channel: ROOT_URI, session: session.uri });
  }

  /** Publishes the session's summary (with its aggregate status) at the end of this turn, if it changed by then. */
  sessionChanged(session: SessionEntry): void {
    this.#changed.set(session.uri, session);
    if (this.#publishScheduled) return;
    this.#publishScheduled = true;
    setImmediate(() => {
      this.#publishScheduled = false;
      const changed = [...this.#changed.values()];
      this.#changed.clear();
      for (const s of changed) if (this.state.sessions.get(s.uri) === s) this.#publish(s);
    });
  }

  #publish(session: SessionEntry): void {
    const next = sessionSummary(session, this.state);
    const prev = this.#published.get(session.uri);
    const changes = prev ? summaryChanges(prev, next) : next;
    if (changes) {
      this.#published.set(session.uri, next);
      this.pipeline.sendRoot(session.tenant, ServerNotification.SessionSummaryChanged, { channel: ROOT_URI, session: session.uri, changes });
    }
  }
}
