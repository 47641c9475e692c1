/**
 * The browser's collaboration client (app/collab.ts) over the real SDK and a real hub, in Node:
 * concurrent edits converge, presence flows, and edits made while disconnected are merged after
 * the SDK reconnects on its own.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import * as Y from 'yjs';
import { AhpClient } from '../../shared/client/ahp-client.js';
import { applyTextDiff, CollabDoc } from '../../app/collab.js';
import { CollabMethod } from '../../shared/protocol/collab.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, tempDir, TOKENS, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

describe('applyTextDiff', () => {
  it('turns one text into another with a minimal edit', () => {
    const doc = new Y.Doc();
    const text = doc.getText('t');
    text.insert(0, 'hello world');
    const deltas: unknown[] = [];
    text.observe((e) => deltas.push(e.delta));
    applyTextDiff(text, 'hello brave world');
    expect(text.toString()).toBe('hello brave world');
    expect(deltas).toEqual([[{ retain: 6 }, { insert: 'brave ' }]]);
    applyTextDiff(text, 'hello world');
    applyTextDiff(text, '');
    expect(text.toString()).toBe('');
    applyTextDiff(text, 'abc');
    applyTextDiff(text, 'abc');
    expect(text.toString()).toBe('abc');
  });
});

describe('CollabDoc (browser collaboration client)', () => {
  let server: TestServer;
  const sockets: WebSocket[] = [];
  const clients: AhpClient[] = [];
  const docs: CollabDoc[] = [];
  let setup: RpcClient;

  beforeEach(async () => {
    server = await startTestServer({ withAuth: true });
    setup = await RpcClient.open(server.wsUrl, { token: TOKENS.alice });
  });
  afterEach(async () => {
    for (const d of docs.splice(0)) d.destroy();
    for (const c of clients.splice(0)) c.close();
    await setup.close();
    await server.stop();
  });

  async function client(token: string): Promise<AhpClient> {
    const c = new AhpClient({
      url: server.wsUrl,
      token,
      createSocket: (url) => {
        const ws = new WebSocket(url);
        sockets.push(ws);
        return ws;
      },
      reconnect: { initialDelayMs: 10, maxDelayMs: 50 },
    });
    await c.connect();
    clients.push(c);
    return c;
  }

  async function openRequest(): Promise<string> {
    const { chat } = await setup.createSession('collab client');
    await setup.subscribe(chat);
    await startScriptTurn(setup, chat, [{ ask: TWO_QUESTION_REQUEST }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    return chat;
  }

  it('converges concurrent edits and shares presence', async () => {
    const chat = await openRequest();
    const a = new CollabDoc(await client(TOKENS.alice), chat, 'req-1');
    const b = new CollabDoc(await client(TOKENS.bob), chat, 'req-1');
    docs.push(a, b);
    await Promise.all([a.join(), b.join()]);
    a.setPresence({ user: { name: 'A' }, editing: 'notes' });
    a.text('notes').insert(0, 'left');
    b.text('notes').insert(0, 'right');
    await waitFor(() => (a.text('notes').toString() === b.text('notes').toString() && a.text('notes').length === 9 ? true : undefined), { what: 'convergence' });
    const seen = await waitFor(() => b.others().find(([, s]) => s.editing === 'notes')?.[1], { what: 'presence' });
    expect(seen.user?.id).toBe('alice');
  });

  it('merges edits made while disconnected once the SDK has reconnected', async () => {
    const chat = await openRequest();
    const bobClient = await client(TOKENS.bob);
    const a = new CollabDoc(await client(TOKENS.alice), chat, 'req-1');
    const b = new CollabDoc(bobClient, chat, 'req-1');
    docs.push(a, b);
    await Promise.all([a.join(), b.join()]);
    a.text('notes').insert(0, 'shared ');
    await waitFor(() => (b.text('notes').toString() === 'shared ' ? true : undefined), { what: 'initial sync' });

    // Cut Bob's socket; he keeps typing offline while Alice types online.
    const states: string[] = [];
    bobClient.onConnectionState((s) => states.push(s));
    for (const s of sockets.filter((s) => s.url.includes(encodeURIComponent(TOKENS.bob)))) s.terminate();
    await waitFor(() => (bobClient.connectionState !== 'open' ? true : undefined), { what: 'bob offline' });
    b.text('notes').insert(b.text('notes').length, 'offline-bob');
    a.text('notes').insert(0, 'online-alice ');

    await waitFor(() => (states.includes('open') ? true : undefined), { what: 'bob reconnected' });
    await waitFor(() => (a.text('notes').toString() === b.text('notes').toString() && a.text('notes').toString().includes('offline-bob') && a.text('notes').toString().includes('online-alice') ? true : undefined), {
      what: 'merge after reconnect',
    });
    expect(a.text('notes').toString()).toBe('online-alice shared offline-bob');
  });
});

describe('CollabDoc across a hub restart', () => {
  const data = tempDir('collab-restart-');
  let hub: TestServer | undefined;
  const opened: Array<{ destroy(): void } | { close(): void | Promise<void> }> = [];
  afterEach(async () => {
    for (const o of opened.splice(0).reverse()) await ('destroy' in o ? o.destroy() : o.close());
    await hub?.stop();
    data.remove();
  });

  it('an offline edit by someone who never typed in the answer survives the restart, whoever re-joins last', async () => {
    hub = await startTestServer({ withAuth: true, dataDir: data.dir });
    const port = hub.port;
    let setup = await RpcClient.open(hub.wsUrl, { token: TOKENS.alice });
    opened.push(setup);
    const { chat } = await setup.createSession('restart');
    await setup.subscribe(chat);
    await startScriptTurn(setup, chat, [{ ask: TWO_QUESTION_REQUEST }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    // Alice stays away after the restart until Bob's merge is in: the order that lost his words.
    let aliceMayConnect = true;
    const connect = (token: string, mayConnect: () => boolean) => {
      const c = new AhpClient({ url: hub!.wsUrl, token, createSocket: (url) => new WebSocket(mayConnect() ? url : 'ws://127.0.0.1:9/ahp'), reconnect: { initialDelayMs: 10, maxDelayMs: 50 } });
      opened.push(c);
      return c;
    };
    const aliceClient = connect(TOKENS.alice, () => aliceMayConnect);
    const bobClient = connect(TOKENS.bob, () => true);
    await Promise.all([aliceClient.connect(), bobClient.connect()]);
    const a = new CollabDoc(aliceClient, chat, 'req-1');
    const b = new CollabDoc(bobClient, chat, 'req-1');
    opened.push(a, b);
    await Promise.all([a.join(), b.join()]);
    a.text('notes').insert(0, 'Fixes login');
    const draft = async (): Promise<string | undefined> => {
      const s = (await setup.subscribe<{ activeTurn?: { responseParts: Array<{ kind: string; request?: { answers?: Record<string, { value?: { value?: unknown } }> } }> } }>(chat)).state;
      const v = s.activeTurn?.responseParts.find((p) => p.kind === 'inputRequest')?.request?.answers?.['notes']?.value?.value;
      return typeof v === 'string' ? v : undefined;
    };
    await waitFor(async () => ((await draft()) === 'Fixes login' && b.text('notes').toString() === 'Fixes login' ? true : undefined), { what: "alice's text everywhere" });

    await setup.close();
    aliceMayConnect = false;
    await hub.close();
    await waitFor(() => (bobClient.connectionState !== 'open' && aliceClient.connectionState !== 'open' ? true : undefined), { what: 'both offline' });
    b.text('notes').insert(b.text('notes').length, ' and logout');
    hub = await startTestServer({ withAuth: true, dataDir: data.dir, port });
    setup = await RpcClient.open(hub.wsUrl, { token: TOKENS.alice });
    opened.push(setup);
    await waitFor(async () => ((await draft()) === 'Fixes login and logout' ? true : undefined), { what: "bob's offline edit in the hub" });
    aliceMayConnect = true;
    await waitFor(() => (a.joined && a.text('notes').toString() === 'Fixes login and logout' ? true : undefined), { what: "alice re-joined with bob's words" });
    // Alice changed nothing offline: her re-join must not write her older text back.
    await waitFor(async () => ((await draft()) === 'Fixes login and logout' && b.text('notes').toString() === 'Fixes login and logout' ? true : undefined), { what: 'everyone on the merge' });
    expect(a.undelivered.size + b.undelivered.size).toBe(0);
  });

  it('an edit that went out just before the hub died, but never became a durable draft, is delivered again after the restart', async () => {
    hub = await startTestServer({ withAuth: true, dataDir: data.dir });
    const port = hub.port;
    let setup = await RpcClient.open(hub.wsUrl, { token: TOKENS.alice });
    opened.push(setup);
    const { chat } = await setup.createSession('lost in flight');
    await setup.subscribe(chat);
    await startScriptTurn(setup, chat, [{ ask: TWO_QUESTION_REQUEST }]);
    await setup.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request');
    // Bob's sync frames can be lost on the way (as they are when the hub dies before mirroring them).
    let dropSync = false;
    const bobClient = new AhpClient({
      url: hub.wsUrl,
      token: TOKENS.bob,
      createSocket: (url) => {
        const ws = new WebSocket(url);
        const send = ws.send.bind(ws) as (data: string) => void;
        (ws as unknown as { send: (data: string) => void }).send = (data) => (dropSync && String(data).includes(CollabMethod.Sync) ? undefined : send(data));
        return ws;
      },
      reconnect: { initialDelayMs: 10, maxDelayMs: 50 },
    });
    opened.push(bobClient);
    await bobClient.connect();
    const b = new CollabDoc(bobClient, chat, 'req-1');
    opened.push(b);
    await b.join();
    b.text('notes').insert(0, 'Fixes login');
    const draft = async (): Promise<string | undefined> => {
      const s = (await setup.subscribe<{ activeTurn?: { responseParts: Array<{ kind: string; request?: { answers?: Record<string, { value?: { value?: unknown } }> } }> } }>(chat)).state;
      const v = s.activeTurn?.responseParts.find((p) => p.kind === 'inputRequest')?.request?.answers?.['notes']?.value?.value;
      return typeof v === 'string' ? v : undefined;
    };
    await waitFor(async () => ((await draft()) === 'Fixes login' ? true : undefined), { what: "bob's durable draft" });
    // What the form does with every state it shows: tell the document which draft is durable.
    b.confirmDurable('notes', 'Fixes login');
    dropSync = true;
    b.text('notes').insert(b.text('notes').length, ' and logout');
    await setup.close();
    await hub.close();
    await waitFor(() => (bobClient.connectionState !== 'open' ? true : undefined), { what: 'bob offline' });
    dropSync = false;
    hub = await startTestServer({ withAuth: true, dataDir: data.dir, port });
    setup = await RpcClient.open(hub.wsUrl, { token: TOKENS.alice });
    opened.push(setup);
    await waitFor(async () => ((await draft()) === 'Fixes login and logout' ? true : undefined), { what: 'the edit the old hub never stored' });
    expect(b.text('notes').toString()).toBe('Fixes login and logout');
  });
});
