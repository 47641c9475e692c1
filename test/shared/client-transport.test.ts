/**
 * The SDK given a transport: two AhpClients talk to a real hub (memory log, the real JSON-RPC
 * router and AHP methods) over `memoryTransport`, with no socket anywhere. What the client does
 * over a WebSocket it does here: handshake, subscribe, a dispatch applied optimistically and
 * confirmed by its echo, the same action shown to the other client, a dropped link reconnected with
 * the pending action resent, and refusals as `AhpError`s carrying their kind.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Hub } from '../../server/hub/hub.js';
import { AhpClient, AhpConnectionError, AhpError, AhpRequestError, type ChatState } from '../../shared/client/ahp-client.js';
import { hubOverMemory } from '../helpers/memory-hub.js';
import { waitFor } from '../helpers/wait-for.js';

const clients: AhpClient[] = [];
let hubs: Hub[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const h of hubs) await h.close();
  hubs = [];
});

function turnStarted(turnId: string, text: string) {
  return { type: 'chat/turnStarted', turnId, startedAt: '2026-12-04T00:00:00.000Z', message: { text, origin: { kind: 'user' } } } as const;
}

describe('AhpClient over an in-memory transport (no socket)', () => {
  it('handshakes, subscribes, dispatches optimistically and shows the echo to another client', async () => {
    const { hub, transport, links } = await hubOverMemory();
    hubs.push(hub);
    const alice = new AhpClient({ transport, clientId: 'alice', token: 't-a', reconnect: false });
    const bob = new AhpClient({ transport, clientId: 'bob', reconnect: false });
    clients.push(alice, bob);
    const init = await alice.connect();
    await bob.connect();
    expect(init.protocolVersion).toBeTruthy();
    expect(alice.connectionState).toBe('open');
    // The factory got the URL with the token appended: the same contract a WebSocket has.
    expect(links.map((l) => l.link.url)).toEqual(['?token=t-a', '']);

    const { defaultChat } = await alice.createSession({ session: 'ahp-session:/mem', title: 'memory' });
    const chatA = await alice.subscribe<ChatState>(defaultChat);
    const chatB = await bob.subscribe<ChatState>(defaultChat);

    const dispatched = chatA.dispatch(turnStarted('t1', 'hello over memory'));
    // Optimistic at once, before any frame was handled.
    expect(chatA.state.activeTurn?.id).toBe('t1');
    expect(chatA.pendingActions).toHaveLength(1);
    const result = await dispatched;
    expect(result.accepted).toBe(true);
    expect(chatA.pendingActions).toHaveLength(0);
    expect(chatA.confirmed.activeTurn?.message.text).toBe('hello over memory');
    await waitFor(() => chatB.state.activeTurn?.id === 't1', { what: "bob's view shows alice's turn" });
    expect(chatB.confirmed).toEqual(chatA.confirmed);
    // Exactly one dispatchAction went out, on alice's link.
    expect(links[0]!.frames.filter((f) => f.includes('"dispatchAction"'))).toHaveLength(1);
  });

  it('reconnects a dropped link and resends the action dispatched while it was down', async () => {
    const { hub, transport, links } = await hubOverMemory();
    hubs.push(hub);
    // Timers wait until the test runs them, so the link stays down while alice dispatches.
    const timers: Array<{ run: () => void; delayMs: number }> = [];
    const scheduler = { setTimeout: (run: () => void, delayMs: number) => timers.push({ run, delayMs }), clearTimeout: () => {} };
    const alice = new AhpClient({ transport, clientId: 'alice', scheduler, random: () => 1, requestTimeoutMs: 60_000, reconnect: { initialDelayMs: 100, maxDelayMs: 100 } });
    const bob = new AhpClient({ transport, clientId: 'bob', reconnect: false });
    clients.push(alice, bob);
    await alice.connect();
    await bob.connect();
    const { defaultChat } = await alice.createSession({ session: 'ahp-session:/drop' });
    const chatA = await alice.subscribe<ChatState>(defaultChat);
    const chatB = await bob.subscribe<ChatState>(defaultChat);

    links[0]!.link.close(1006, 'cut');
    await waitFor(() => alice.connectionState === 'reconnecting', { what: 'alice sees the drop' });
    const dispatched = chatA.dispatch(turnStarted('t2', 'typed while down'));
    expect(chatA.state.activeTurn?.id).toBe('t2');
    expect(links).toHaveLength(2);
    const reconnect = timers.find((t) => t.delayMs === 100);
    expect(reconnect).toBeDefined();
    reconnect!.run();
    expect((await dispatched).accepted).toBe(true);
    expect(alice.connectionState).toBe('open');
    expect(links).toHaveLength(3); // alice, bob, alice again
    await waitFor(() => chatB.confirmed.activeTurn?.id === 't2', { what: 'bob sees the resent action' });
  });

  it('surfaces refusals and closing as AhpErrors that carry their kind', async () => {
    const { hub, transport } = await hubOverMemory();
    hubs.push(hub);
    const client = new AhpClient({ transport, reconnect: false });
    clients.push(client);
    await client.connect();
    const refused = await client.subscribe('ahp-chat:/nope').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AhpRequestError);
    expect(refused).toBeInstanceOf(AhpError);
    expect((refused as AhpError).kind).toBe('not_found');
    const exists = await client
      .createSession({ session: 'ahp-session:/twice' })
      .then(() => client.createSession({ session: 'ahp-session:/twice' }))
      .catch((e: unknown) => e);
    expect((exists as AhpError).kind).toBe('session_exists');
    client.close();
    const closed = await client.ping().catch((e: unknown) => e);
    expect(closed).toBeInstanceOf(AhpConnectionError);
    expect((closed as AhpError).kind).toBe('client_closed');
  });
});
