/**
 * Version-true delivery (issue 29 item 2): a 0.8, a 1.0 and a 1.1 client watch one chat (and its
 * session) while another 1.1 client marks the chat read and archived and steers the running turn.
 * Each watcher folds what it receives the way an official client of its own version does: the
 * hub's reducers, but an action type its version does not know is dropped (upstream: "clients
 * SHOULD silently ignore actions with unrecognized type values"); when the hub closes it with the
 * resync code it reconnects (`initialize` with its version, then `reconnect`). At every step each
 * replica must equal a fresh snapshot, and no watcher may have been sent a type its version lacks.
 *
 * The 0.9 types are listed here from upstream's registry (`types/version/registry.ts`:
 * `chat/isReadChanged`, `chat/isArchivedChanged`, `chat/turnResume`, `session/chatsReordered`
 * at 0.9.0) plus the steering-message list this hub dates to 0.9.0 — not read from the code
 * under test.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';
import { RpcClient, RpcError } from '../helpers/rpc-client.js';
import { hubPerTest } from '../helpers/start-server.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

const NEWER_THAN_0_8 = new Set(['chat/isReadChanged', 'chat/isArchivedChanged', 'chat/turnResume', 'session/chatsReordered', 'chat/steeringMessageSet', 'chat/steeringMessageRemoved']);
const knownTo = (version: string, type: string) => !(version.startsWith('0.8.') && NEWER_THAN_0_8.has(type));
const RESYNC = 4013;

interface Watcher {
  version: string;
  rpc: RpcClient;
  clientId: string;
  replicas: Map<string, any>;
  seen: number;
  unknownReceived: string[];
  resyncs: number;
}

describe('version-true delivery: 0.8, 1.0 and 1.1 replicas equal the hub at every step', () => {
  const hubs = hubPerTest();
  const extra: RpcClient[] = [];
  afterEach(async () => {
    for (const c of extra.splice(0)) await c.close();
  });

  it('initialize with protocolVersions [] answers -32005 with supportedVersions', async () => {
    const server = await hubs.start();
    const c = hubs.track(await RpcClient.connect(server.wsUrl));
    const err = await c.initialize([], []).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RpcError);
    expect((err as RpcError).code).toBe(-32005);
    expect((err as RpcError).data).toMatchObject({ supportedVersions: ['1.0.0', '0.9.0', '0.8.0'] });
    await waitFor(() => (c.closed ? true : undefined), { what: 'closed after -32005' });
  });

  it('negotiates 0.8.0, 1.0.0 and 1.1.0 as offered', async () => {
    const server = await hubs.start();
    for (const [offer, chosen] of [
      [['0.8.0'], '0.8.0'],
      [['1.0.0', '0.9.0'], '1.0.0'],
      [['0.9.0', '1.1.0'], '1.1.0'],
    ] as const) {
      const c = hubs.track(await RpcClient.connect(server.wsUrl));
      expect(((await c.initialize([], [...offer])) as { protocolVersion?: string }).protocolVersion).toBe(chosen);
    }
  });

  it('read, archived and steering: each version folds to the snapshot; 0.8 is never sent a 0.9 action', async () => {
    const server = await hubs.start();
    const actor = hubs.track(await RpcClient.connect(server.wsUrl));
    await actor.initialize([], ['1.1.0']);
    const { session, chat } = await actor.createSession('versions');
    const channels = [session, chat];

    const open = async (w: Pick<Watcher, 'version' | 'clientId'>) => {
      const rpc = await RpcClient.connect(server.wsUrl, { clientId: w.clientId });
      extra.push(rpc);
      await rpc.initialize([], [w.version]);
      return rpc;
    };
    const watchers: Watcher[] = [];
    for (const version of ['0.8.0', '1.0.0', '1.1.0']) {
      const w: Watcher = { version, clientId: `watcher-${version}`, rpc: undefined as unknown as RpcClient, replicas: new Map(), seen: 0, unknownReceived: [], resyncs: 0 };
      w.rpc = await open(w);
      for (const ch of channels) {
        const snap = await w.rpc.subscribe(ch);
        w.replicas.set(ch, snap.state);
        w.seen = Math.max(w.seen, snap.fromSeq);
      }
      watchers.push(w);
    }

    const fold = (w: Watcher, envelopes: readonly ActionEnvelope[], upTo = Number.POSITIVE_INFINITY) => {
      for (const e of envelopes) {
        if (e.serverSeq <= w.seen || e.serverSeq > upTo || e.rejectionReason !== undefined) continue;
        w.seen = e.serverSeq;
        const state = w.replicas.get(e.channel);
        if (state === undefined) continue;
        if (!knownTo(w.version, e.action.type)) {
          // What an official client of this version does with a type it does not know: ignore it.
          w.unknownReceived.push(e.action.type);
          continue;
        }
        w.replicas.set(e.channel, e.channel === chat ? chatReducer(state, e.action) : sessionReducer(state, e.action));
      }
    };

    /**
     * The official client's answer to the resync close: a new connection opened with `reconnect`
     * (the lifecycle allows it first; it offers no version, so the hub must remember this client
     * id's 0.8, or the next 0.9 action would reach it and show up in `unknownReceived`).
     */
    const resync = async (w: Watcher) => {
      expect(w.rpc.closeCode, `${w.version} closed`).toBe(RESYNC);
      w.resyncs++;
      fold(w, w.rpc.envelopes);
      w.rpc = await RpcClient.connect(server.wsUrl, { clientId: w.clientId });
      extra.push(w.rpc);
      const back = await w.rpc.request<any>('reconnect', { channel: 'ahp-root://', clientId: w.clientId, lastSeenServerSeq: w.seen, subscriptions: channels });
      if (back.type === 'snapshot') {
        for (const s of back.snapshots) w.replicas.set(s.resource, s.state);
        w.seen = Math.max(w.seen, ...back.snapshots.map((s: any) => s.fromSeq));
      } else {
        fold(w, back.actions);
      }
    };

    const check = async (label: string) => {
      await actor.request('ping', {});
      for (const w of watchers) {
        for (;;) {
          if (w.rpc.closed) {
            await resync(w);
            continue;
          }
          let snaps: Array<{ state: unknown; fromSeq: number }>;
          try {
            snaps = [];
            for (const ch of channels) snaps.push(await w.rpc.subscribe(ch));
          } catch (e) {
            if (w.rpc.closed) continue;
            throw e;
          }
          const upTo = Math.min(...snaps.map((s) => s.fromSeq));
          fold(w, w.rpc.envelopes, upTo);
          channels.forEach((ch, i) => {
            expect(w.replicas.get(ch), `${label}: ${w.version} replica of ${ch}`).toEqual(snaps[i]!.state);
          });
          break;
        }
        expect(w.unknownReceived, `${label}: types sent to ${w.version} that it does not know`).toEqual([]);
      }
    };

    // The case: an idle chat marked read and archived (hub: status 97 = idle | read | archived).
    expect((await actor.dispatchAndWait(chat, { type: 'chat/isReadChanged', isRead: true })).rejectionReason).toBeUndefined();
    expect((await actor.dispatchAndWait(chat, { type: 'chat/isArchivedChanged', isArchived: true })).rejectionReason).toBeUndefined();
    expect((await actor.subscribe<any>(chat)).state.status).toBe(97);
    await check('chat marked read and archived');

    await startScriptTurn(actor, chat, [{ ask: { id: 'req-1', questions: [{ id: 'why', kind: 'text', message: 'Why?' }] } }, { say: 'Done.' }]);
    await waitFor(async () => ((await actor.subscribe<any>(chat)).state.activeTurn?.responseParts.some((p: any) => p.kind === 'inputRequest') ? true : undefined), { what: 'turn waits on req-1' });
    await check('turn running');
    expect((await actor.dispatchAndWait(chat, { type: 'chat/isReadChanged', isRead: true })).rejectionReason).toBeUndefined();
    await check('running chat marked read');

    const caps = await actor.request<any>('x-input/capabilities', { channel: session });
    const submitted = await actor.request<any>('x-input/submit', { channel: session, inputId: 'steer-1', target: caps.target, content: { text: 'keep it short' } });
    expect(submitted).toBeDefined();
    await waitFor(async () => ((await actor.subscribe<any>(chat)).state.steeringMessages?.length ? true : undefined), { what: 'steering listed' });
    await check('steering listed');

    expect((await actor.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId: 'req-1', response: 'accept', answers: { why: { state: 'submitted', value: { kind: 'text', value: 'because' } } } })).rejectionReason).toBeUndefined();
    await actor.waitForEnvelope((e) => e.channel === chat && e.action.type === 'chat/turnComplete', 'turn end');
    await check('turn complete');

    // Only the 0.8 watcher needed snapshots (read and archived together — it was closed at the
    // first —, read again, steering listed, steering removed); 1.0 and 1.1 got every action as is.
    expect(watchers.map((w) => w.resyncs)).toEqual([4, 0, 0]);
  });
});
