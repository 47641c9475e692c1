/**
 * A rolling restart behind the real HAProxy (docs/cluster.md, "Rolling restart"): the three nodes
 * are drained with SIGTERM and started again on the same port, one at a time (the next only once
 * HAProxy sends clients to the restarted one), while everyone works through the proxy with the
 * SDK: a team of three types drafts into a form the demo agent asked, an agent streams a long
 * turn, and writers queue messages. Nothing acknowledged is lost; the form is still open with
 * every member's last draft and can be submitted, after which the demo agent carries on and
 * completes; the streaming turn resumes on the node that took its lease each time and completes
 * with every part said exactly once and no error.
 */
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AhpClient, type ChannelView } from '../../shared/client/ahp-client.js';
import { isPartOfKind, type ChatState, type InputRequestPart } from '../../shared/protocol/state.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { userMessage } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { subscribeWhenKnown } from './cluster.js';
import { drain, proxiedClusterPerFile, proxySaid, restartOnSamePort, saidIn } from './proxied.js';
import { SdkWriter } from './sdk-writer.js';

const PARTS = 150;
const FORM = {
  id: 'plan',
  message: 'Plan the release',
  questions: [0, 1, 2].map((i) => ({ id: `q${i}`, kind: 'text', message: `Question ${i}`, required: true, max: 200 })),
};

/** One team member: types drafts into its own question until stopped; `acked` is the last draft the hub acknowledged. */
class Typist {
  acked: string | undefined;
  readonly refused: string[] = [];
  #stopped = false;
  constructor(
    readonly index: number,
    readonly view: ChannelView<ChatState>,
  ) {}

  async run(): Promise<void> {
    for (let k = 1; !this.#stopped; k++) {
      const value = `member ${this.index} draft ${k}`;
      const result = await this.view.dispatch({ type: 'chat/inputAnswerChanged', requestId: FORM.id, questionId: `q${this.index}`, answer: { state: 'draft', value: { kind: 'text', value } } });
      if (result.accepted || /already applied/.test(result.reason)) this.acked = value;
      else this.refused.push(`${value}: ${result.reason}`);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }

  stop(): void {
    this.#stopped = true;
  }
}

describe('rolling restart of three nodes behind HAProxy', () => {
  beforeAll(() => {
    process.env['HUB_AGENT_LEASE_TTL_MS'] = '2000';
  });
  const fx = proxiedClusterPerFile();
  const sdk: AhpClient[] = [];
  afterAll(() => {
    for (const c of sdk.splice(0)) c.close();
    delete process.env['HUB_AGENT_LEASE_TTL_MS'];
  });
  const connect = async (): Promise<AhpClient> => {
    const c = new AhpClient({ url: fx.proxy.wsUrl, createSocket: (u) => new WebSocket(u) });
    sdk.push(c);
    await c.connect();
    return c;
  };

  it('nothing acknowledged is lost, the form stays answerable, the streaming turn resumes each time and completes', async () => {
    // The team and the form (a demo-agent turn waiting for the answers).
    const team = [await connect(), await connect(), await connect()];
    const form = await team[0]!.createSession({ title: 'form' });
    const views: Array<ChannelView<ChatState>> = [];
    for (const member of team) views.push(await waitFor(() => member.subscribe(form.defaultChat as `ahp-chat:/${string}`), { what: 'the form chat on every node', timeoutMs: 15_000 }));
    const formTurn = 'form-turn';
    expect((await views[0]!.dispatch({ type: 'chat/turnStarted', turnId: formTurn, startedAt: new Date().toISOString(), message: userMessage(JSON.stringify({ script: [{ ask: FORM }, { say: 'Thanks, planning now.' }] })) })).accepted).toBe(
      true,
    );
    const openRequest = (state: ChatState): InputRequestPart | undefined => state.activeTurn?.responseParts.find((p): p is InputRequestPart => isPartOfKind(p, 'inputRequest') && p.request.id === FORM.id && p.response === undefined);
    await waitFor(() => views.every((v) => openRequest(v.state)) || undefined, { what: 'the form open for the team', timeoutMs: 15_000 });
    const typists = views.map((v, i) => new Typist(i, v));
    const typing = typists.map((t) => t.run());

    // The streaming turn.
    const streamer = await connect();
    const stream = await streamer.createSession({ title: 'stream' });
    const streamView = await streamer.subscribe(stream.defaultChat as `ahp-chat:/${string}`);
    const streamTurn = 'stream-turn';
    const script = Array.from({ length: PARTS }, (_, i) => [{ sleep: 400 }, { say: `part ${i + 1} of ${PARTS}.` }]).flat();
    expect((await streamView.dispatch({ type: 'chat/turnStarted', turnId: streamTurn, startedAt: new Date().toISOString(), message: userMessage(JSON.stringify({ script })) })).accepted).toBe(true);

    // Writers queueing messages throughout.
    for (let i = 0; i < 3; i++) {
      const w = await SdkWriter.open(`r${i}`, fx.proxy.wsUrl);
      fx.writers.push(w);
      await w.createChat();
    }
    const writing = fx.writers.map((w) => w.run(90, 1, 250));

    for (let index = 0; index < 3; index++) {
      const name = `hub-${index + 1}`;
      // The streaming turn runs while each node drains, and carries on after.
      expect(streamView.state.activeTurn?.id, `the streaming turn runs when ${name} drains`).toBe(streamTurn);
      const saidBefore = saidIn(streamView.state, streamTurn).length;
      const downs = proxySaid(fx.proxy, name, 'DOWN');
      const drained = await drain(fx.cluster.nodes[index]!);
      expect(drained.healthDuringDrain, `${name}: /healthz while draining`).toBe(503);
      expect(drained.exit, `${name} exits cleanly once its work is handed over`).toEqual({ code: 0, signal: null });
      await waitFor(() => (proxySaid(fx.proxy, name, 'DOWN') > downs ? true : undefined), { what: `HAProxy to take ${name} out`, timeoutMs: 5_000 });
      await restartOnSamePort(fx, index);
      await waitFor(() => [...sdk, ...fx.writers.map((w) => w.client)].every((c) => c.connectionState === 'open') || undefined, { what: 'every client open again', timeoutMs: 10_000 });
      await waitFor(() => saidIn(streamView.state, streamTurn).length > saidBefore || undefined, { what: `the streaming turn to carry on after ${name}`, timeoutMs: 15_000 });
    }

    // The form: still open, each member's last acknowledged draft in it, and answerable.
    for (const t of typists) t.stop();
    await Promise.all(typing);
    const reader = await RpcClient.open(fx.cluster.nodes[0]!.wsUrl);
    fx.clients.push(reader);
    const formState = (await subscribeWhenKnown<ChatState>(reader, form.defaultChat)).state;
    const part = openRequest(formState);
    expect(part, 'the form is still open').toBeDefined();
    for (const t of typists) {
      expect(t.refused).toEqual([]);
      expect(t.acked).toBeDefined();
      expect(part!.request.answers?.[`q${t.index}`]).toEqual({ state: 'draft', value: { kind: 'text', value: t.acked } });
    }
    const submitted = await views[1]!.dispatch({
      type: 'chat/inputCompleted',
      requestId: FORM.id,
      response: 'accept',
      answers: Object.fromEntries(typists.map((t) => [`q${t.index}`, { state: 'submitted', value: { kind: 'text', value: t.acked } }])),
    });
    expect(submitted.accepted).toBe(true);
    await waitFor(() => (views[0]!.state.turns.find((t) => t.id === formTurn) ? true : undefined), { what: 'the form turn to complete', timeoutMs: 20_000 });
    const formDone = views[0]!.state.turns.find((t) => t.id === formTurn)!;
    expect(formDone.state).toBe('complete');
    expect(saidIn(views[0]!.state, formTurn).at(-1)).toBe('Thanks, planning now.');

    // The streaming turn: completes with every part exactly once, in order.
    await waitFor(() => (streamView.state.turns.find((t) => t.id === streamTurn) ? true : undefined), { what: 'the streaming turn to complete', timeoutMs: 60_000 });
    expect(streamView.state.turns.find((t) => t.id === streamTurn)!.state).toBe('complete');
    expect(saidIn(streamView.state, streamTurn)).toEqual(Array.from({ length: PARTS }, (_, i) => `part ${i + 1} of ${PARTS}.`));

    // Writers: every acknowledged message is in the final state.
    await Promise.all(writing);
    for (const w of fx.writers) {
      expect(w.refused, w.name).toEqual([]);
      expect(w.echoed.size).toBe(90);
      const state = (await subscribeWhenKnown<{ queuedMessages?: Array<{ id: string }> }>(reader, w.chat)).state;
      const inState = new Set((state.queuedMessages ?? []).map((m) => m.id));
      for (const id of w.echoed) expect(inState.has(id), id).toBe(true);
    }
  }, 240_000);
});
