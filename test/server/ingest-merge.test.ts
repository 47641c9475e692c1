/**
 * The ingest merge rule (CommitPipeline.sequence): a server-side agent's consecutive streaming
 * actions of one part that arrive together become one log record and one envelope; a client's
 * dispatches keep one record and one echo per clientSeq, so AHP write-ahead reconciliation (the
 * real `Reconciler`) confirms every pending action exactly once.
 */
import { describe, expect, it } from 'vitest';
import type { ActionEnvelope, WireAction } from '../../shared/protocol/messages.js';
import type { ChatState } from '../../shared/protocol/state.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { Reconciler } from '../../shared/client/reconciler.js';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import { Hub } from '../../server/hub/hub.js';
import { silentLogger } from '../../server/log.js';
import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import { FakeConnection } from '../helpers/fake-connection.js';

const AGENTS = [{ provider: 'remote', displayName: 'R' }];

async function openHub(log: MemoryActionLog) {
  let n = 0;
  return Hub.open({ log, logger: silentLogger, now: () => 1_000, newId: () => `id-${++n}`, agents: AGENTS, defaultProvider: 'remote' });
}

async function chatWithPart() {
  const log = new MemoryActionLog();
  const hub = await openHub(log);
  const { defaultChat: chat } = await hub.createSession(DEV_PRINCIPAL, { uri: 'ahp-session:/s' });
  await hub.dispatchServer(chat, { type: 'chat/turnStarted', turnId: 't1', startedAt: '1970-01-01T00:00:00.000Z', message: { text: 'go', origin: { kind: 'user' } } } as WireAction);
  await hub.dispatchServer(chat, { type: 'chat/responsePart', turnId: 't1', part: { kind: 'markdown', id: 'p1', content: '' } } as WireAction);
  return { log, hub, chat };
}

const delta = (content: string): WireAction => ({ type: 'chat/delta', turnId: 't1', partId: 'p1', content }) as WireAction;
/** The first part's text of the running turn, or of the last turn once it has ended (recovery ends it). */
const contentOf = (state: ChatState | undefined): string => {
  const turn = state?.activeTurn ?? state?.turns[state.turns.length - 1];
  return (turn?.responseParts[0] as { content?: string } | undefined)?.content ?? '';
};
const fold = (start: ChatState, envelopes: ActionEnvelope[]): ChatState => envelopes.reduce((s, e) => chatReducer(s, e.action), start);

describe('ingest merge rule', () => {
  it("folds a server-side agent's burst of deltas into one record and one envelope, and recovery rebuilds the same state", async () => {
    const { log, hub, chat } = await chatWithPart();
    const observer = new FakeConnection('observer');
    const start = hub.subscribe(observer, DEV_PRINCIPAL, chat);
    const headBefore = await log.head();
    const fragments = Array.from({ length: 50 }, (_, i) => `f${i} `);
    const seqs = await Promise.all(fragments.map((f) => hub.dispatchServer(chat, delta(f))));
    expect(new Set(seqs).size).toBe(1);
    const records = await log.read(headBefore, Number.POSITIVE_INFINITY);
    expect(records.filter((r) => r.action.type === 'chat/delta')).toHaveLength(1);
    expect(observer.envelopes().filter((e) => e.action.type === 'chat/delta')).toHaveLength(1);
    expect(contentOf(hub.chatEntry(chat)?.state)).toBe(fragments.join(''));
    expect(contentOf(fold(start.state as ChatState, observer.envelopes()))).toBe(fragments.join(''));
    await hub.close();
    const reopened = await openHub(log);
    expect(contentOf(reopened.chatEntry(chat)?.state)).toBe(fragments.join(''));
    await reopened.close();
  });

  it('never folds into a record whose seq was handed out: a subscriber joining mid-burst misses nothing', async () => {
    const { log, hub, chat } = await chatWithPart();
    const late = new FakeConnection('late');
    const headBefore = await log.head();
    const first = Array.from({ length: 5 }, (_, i) => hub.dispatchServer(chat, delta(`a${i} `)));
    const snapshot = hub.subscribe(late, DEV_PRINCIPAL, chat); // fromSeq = the record the a-deltas went into
    const second = Array.from({ length: 5 }, (_, i) => hub.dispatchServer(chat, delta(`b${i} `)));
    await Promise.all([...first, ...second]);
    const records = (await log.read(headBefore, Number.POSITIVE_INFINITY)).filter((r) => r.action.type === 'chat/delta');
    expect(records).toHaveLength(2);
    expect(contentOf(fold(snapshot.state as ChatState, late.envelopes()))).toBe(contentOf(hub.chatEntry(chat)?.state));
    await hub.close();
  });

  it("keeps one echo per clientSeq for a client's burst: the Reconciler confirms each pending action once, none skipped, none left", async () => {
    const { hub, chat } = await chatWithPart();
    const agent = new FakeConnection('agent');
    const observer = new FakeConnection('observer');
    const start = hub.subscribe(agent, DEV_PRINCIPAL, chat);
    hub.subscribe(observer, DEV_PRINCIPAL, chat);
    const reconciler = new Reconciler<ChatState>(chatReducer, start.state as ChatState, start.fromSeq);
    const client = { conn: agent, principal: DEV_PRINCIPAL, clientId: 'agent' };
    const fragments = Array.from({ length: 40 }, (_, i) => `c${i} `);
    fragments.forEach((f, i) => {
      reconciler.addPending({ clientSeq: i + 1, action: delta(f) });
      hub.dispatchFromClient(client, chat, i + 1, delta(f));
    });
    await hub.drain();
    const confirmed: number[] = [];
    for (const envelope of agent.envelopes()) {
      const outcome = reconciler.applyEnvelope(envelope, 'agent');
      expect(outcome.kind).toBe('confirmed');
      if (outcome.kind !== 'confirmed') continue;
      expect(outcome.skipped).toEqual([]);
      confirmed.push(outcome.pending.clientSeq);
    }
    expect(confirmed).toEqual(fragments.map((_, i) => i + 1)); // each once, in order
    expect(reconciler.pending).toEqual([]);
    expect(contentOf(reconciler.confirmed)).toBe(fragments.join(''));
    // Everyone else got the run as one envelope.
    expect(observer.envelopes().filter((e) => e.action.type === 'chat/delta')).toHaveLength(1);
    await hub.close();
  });
});
