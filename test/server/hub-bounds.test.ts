import { describe, expect, it } from 'vitest';
import { checkJsonBounds, JsonBounds } from '../../shared/protocol/json-bounds.js';
import { parseAction } from '../../shared/protocol/actions.js';
import { ClientLedger, LEDGER_LIMITS } from '../../server/hub/client-ledger.js';
import { validateAgentAction } from '../../server/hub/agent-actions.js';
import { ChannelSizeBudget } from '../../server/hub/channel-budget.js';

const nested = (levels: number): unknown => JSON.parse('['.repeat(levels) + ']'.repeat(levels)) as unknown;

describe('JSON bounds', () => {
  it('accepts exactly the maximum depth and refuses one level more, in objects and arrays', () => {
    expect(checkJsonBounds(nested(JsonBounds.maxDepth))).toBeUndefined();
    expect(checkJsonBounds(nested(JsonBounds.maxDepth + 1))?.code).toBe('json_too_deep');
    expect(checkJsonBounds({ a: [{ b: nested(JsonBounds.maxDepth - 2) }] })?.code).toBe('json_too_deep');
  });

  it('checks 100,000 levels without overflowing the stack', () => {
    expect(checkJsonBounds(nested(100_000))?.code).toBe('json_too_deep');
  });

  it('refuses a key longer than the bound anywhere in the value, and parseAction reports it with its code', () => {
    const long = 'k'.repeat(JsonBounds.maxKeyLength + 1);
    expect(checkJsonBounds({ ok: [{ [long]: 1 }] })?.code).toBe('json_key_too_long');
    expect(checkJsonBounds({ ['k'.repeat(JsonBounds.maxKeyLength)]: 1 })).toBeUndefined();
    const parsed = parseAction({ type: 'x-unknown/thing', payload: { [long]: true } });
    expect(parsed).toMatchObject({ ok: false, code: 'json_key_too_long' });
  });
});

describe('client ledger', () => {
  const alice = { tenant: 'acme', user: 'alice' };
  const mallory = { tenant: 'evil', user: 'mallory' };

  it("never answers one principal with another principal's decision for the same clientId", () => {
    const ledger = new ClientLedger();
    ledger.accepted(alice, 'c1', 7, 100);
    expect(ledger.duplicate(alice, 'c1', 7)).toEqual({ kind: 'accepted', serverSeq: 100 });
    expect(ledger.duplicate(mallory, 'c1', 7)).toBeUndefined();
    expect(ledger.claim(mallory, 'c1')).toBe('in_use');
    expect(ledger.claim(alice, 'c1')).toBe('claimed');
  });

  it('a rejected 2^53−1 does not make later clientSeqs duplicates; an accepted one neither', () => {
    const ledger = new ClientLedger();
    ledger.rejected(alice, 'c', Number.MAX_SAFE_INTEGER, 'no');
    expect(ledger.duplicate(alice, 'c', 1)).toBeUndefined();
    ledger.accepted(alice, 'c', Number.MAX_SAFE_INTEGER - 1, 5);
    expect(ledger.duplicate(alice, 'c', 2)).toBeUndefined();
  });

  it('forgets the lowest clientSeqs first and counts them (and below) as applied, also across an image round trip', () => {
    const ledger = new ClientLedger();
    const n = LEDGER_LIMITS.maxAcceptedPerClient + 10;
    for (let seq = 1; seq <= n; seq++) ledger.accepted(alice, 'c', seq, 1000 + seq);
    expect(ledger.duplicate(alice, 'c', 3)?.kind).toBe('rejected');
    expect(ledger.duplicate(alice, 'c', n)).toEqual({ kind: 'accepted', serverSeq: 1000 + n });
    expect(ledger.duplicate(alice, 'c', n + 1)).toBeUndefined();
    const restored = ClientLedger.fromImage(JSON.parse(JSON.stringify(ledger.toImage())));
    expect(restored.duplicate(alice, 'c', n)).toEqual({ kind: 'accepted', serverSeq: 1000 + n });
    expect(restored.duplicate(alice, 'c', n - LEDGER_LIMITS.maxAcceptedPerClientInImage)?.kind).toBe('rejected');
    expect(restored.duplicate(alice, 'c', n + 1)).toBeUndefined();
    expect(restored.claim(mallory, 'c')).toBe('in_use');
  });
});

describe('client ledger eviction (issue 18.4)', () => {
  const alice = { tenant: 'acme', user: 'alice' };
  const viewer = { tenant: 'acme', user: 'victor' };

  it("a viewer initializing 10,100 fresh clientIds evicts nothing of a user's: the re-sent action stays decided and the clientId stays the user's", () => {
    const ledger = new ClientLedger();
    expect(ledger.claim(alice, 'alice-tab')).toBe('claimed');
    ledger.accepted(alice, 'alice-tab', 7, 100);
    const outcomes = new Set<string>();
    for (let i = 0; i < 10_100; i++) outcomes.add(ledger.claim(viewer, `fresh-${i}`));
    expect([...outcomes]).toEqual(['claimed']);
    expect(ledger.duplicate(alice, 'alice-tab', 7)).toEqual({ kind: 'accepted', serverSeq: 100 });
    expect(ledger.claim(viewer, 'alice-tab')).toBe('in_use');
  });

  it("a principal's own churn retires its idle clients (still decided, still bound), and forgets one only after the idle window, refusing fresh clientIds before", () => {
    let clock = 0;
    const limits = { ...LEDGER_LIMITS, maxClientsPerPrincipal: 10, maxRetiredPerPrincipal: 50, forgetIdleAfterMs: 1_000 };
    const ledger = new ClientLedger(() => clock, limits);
    for (let i = 0; i < 60; i++) {
      expect(ledger.claim(alice, `tab-${i}`)).toBe('claimed');
      ledger.accepted(alice, `tab-${i}`, 1, 1_000 + i);
    }
    // All 60 are remembered: 10 in full, 50 retired with their floor. None is applied twice.
    for (let i = 0; i < 60; i++) expect(ledger.duplicate(alice, `tab-${i}`, 1)).toBeDefined();
    expect(ledger.duplicate(alice, 'tab-0', 1)?.kind).toBe('rejected');
    expect(ledger.duplicate(alice, 'tab-59', 1)).toEqual({ kind: 'accepted', serverSeq: 1_059 });
    expect(ledger.duplicate(alice, 'tab-0', 2)).toBeUndefined();
    expect(ledger.claim(viewer, 'tab-0')).toBe('in_use');
    // One more fresh clientId would forget a client retired less than the window ago: refused.
    expect(ledger.claim(alice, 'tab-60')).toBe('client_id_quota');
    // A clientId it used before is always welcome (revived from its retired floor).
    expect(ledger.claim(alice, 'tab-3')).toBe('claimed');
    expect(ledger.duplicate(alice, 'tab-3', 1)?.kind).toBe('rejected');
    clock += 1_000;
    // Now the least recently retired one (tab-0) is forgotten for the fresh clientId, and only it.
    expect(ledger.claim(alice, 'tab-60')).toBe('claimed');
    expect(ledger.duplicate(alice, 'tab-0', 1)).toBeUndefined();
    // Retired clients survive a snapshot image, bindings included.
    const restored = ClientLedger.fromImage(JSON.parse(JSON.stringify(ledger.toImage())), () => clock, limits);
    expect(restored.duplicate(alice, 'tab-5', 1)?.kind).toBe('rejected');
    expect(restored.claim(viewer, 'tab-5')).toBe('in_use');
    expect(restored.duplicate(alice, 'tab-60', 2)).toBeUndefined();
  });
});

describe('client ledger expiry (issue 33.4)', () => {
  const alice = { tenant: 'acme', user: 'alice' };
  const mallory = { tenant: 'acme', user: 'mallory' };
  const DAY_MS = 24 * 3600_000;

  it('30,000 fresh clientIds from one token over a day of simulated time (a restart half-way): every one is claimed, the token still connects', () => {
    let clock = 0;
    let ledger = new ClientLedger(() => clock);
    const total = 30_000;
    const refused: number[] = [];
    for (let i = 0; i < total; i++) {
      // One browser tab: a fresh clientId, a few dispatches, then the tab is closed.
      if (ledger.claim(alice, `tab-${i}`) !== 'claimed') refused.push(i);
      else for (let seq = 1; seq <= 3; seq++) ledger.accepted(alice, `tab-${i}`, seq, i * 3 + seq);
      clock += DAY_MS / total;
      if (i === total / 2) ledger = ClientLedger.fromImage(JSON.parse(JSON.stringify(ledger.toImage())), () => clock);
    }
    expect(refused.length === 0 ? 'none refused' : `${refused.length} refused, the first at tab ${refused[0]}`).toBe('none refused');
    expect(ledger.claim(alice, 'one-more-tab')).toBe('claimed');
    // The recent tabs are still remembered: their clientSeqs stay decided and their clientIds bound.
    expect(ledger.duplicate(alice, `tab-${total - 1}`, 3)).toEqual({ kind: 'accepted', serverSeq: (total - 1) * 3 + 3 });
    expect(ledger.duplicate(alice, `tab-${total - 2_000}`, 2)?.kind).toBe('rejected');
    expect(ledger.claim(mallory, `tab-${total - 2_000}`)).toBe('in_use');
  });

  it('a clientId a connection still uses is never forgotten, however quiet it is and however many fresh ones the principal makes', () => {
    let clock = 0;
    const limits = { ...LEDGER_LIMITS, maxClientsPerPrincipal: 10, maxRetiredPerPrincipal: 50, forgetIdleAfterMs: 1_000 };
    const ledger = new ClientLedger(() => clock, limits);
    expect(ledger.claim(alice, 'open-tab')).toBe('claimed');
    const socket = {};
    ledger.connected(socket, alice, 'open-tab');
    ledger.accepted(alice, 'open-tab', 1, 1);
    for (let i = 0; i < 500; i++) {
      expect(ledger.claim(alice, `tab-${i}`)).toBe('claimed');
      clock += 100;
    }
    // Retired long ago but still connected: still decided and still bound.
    expect(ledger.duplicate(alice, 'open-tab', 1)?.kind).toBe('rejected');
    expect(ledger.claim(mallory, 'open-tab')).toBe('in_use');
    // Closed: its idle time starts then, and after the window it may be forgotten for fresh ones.
    ledger.disconnected(socket);
    for (let i = 500; i < 700; i++) {
      expect(ledger.claim(alice, `tab-${i}`)).toBe('claimed');
      clock += 100;
    }
    expect(ledger.duplicate(alice, 'open-tab', 1)).toBeUndefined();
    expect(ledger.claim(mallory, 'open-tab')).toBe('claimed');
  });

  it('a principal making more than its bound of fresh clientIds within the idle window is still refused (client_id_quota)', () => {
    const clock = 0;
    const limits = { ...LEDGER_LIMITS, maxClientsPerPrincipal: 10, maxRetiredPerPrincipal: 50 };
    const ledger = new ClientLedger(() => clock, limits);
    for (let i = 0; i < 60; i++) expect(ledger.claim(alice, `burst-${i}`)).toBe('claimed');
    expect(ledger.claim(alice, 'burst-60')).toBe('client_id_quota');
    expect(ledger.claim(mallory, 'other-principal')).toBe('claimed');
  });
});

describe('agent actions that name other resources', () => {
  const scope = { session: 'ahp-session:/s', chats: new Set(['ahp-chat:/a', 'ahp-chat:/b']) };
  const state = (over: Record<string, unknown>) => ({
    resource: 'ahp-session:/s',
    provider: 'remote',
    title: 't',
    status: 1,
    lifecycle: 'ready',
    activeClients: [],
    chats: [
      { resource: 'ahp-chat:/a', title: 'a', status: 1, modifiedAt: '2026-01-01T00:00:00Z' },
      { resource: 'ahp-chat:/b', title: 'b', status: 1, modifiedAt: '2026-01-01T00:00:00Z' },
    ],
    defaultChat: 'ahp-chat:/a',
    ...over,
  });

  it('accepts a stateReplaced that names only its own chats, and refuses every foreign reference', () => {
    expect(validateAgentAction({ type: 'x-session/stateReplaced', state: state({}) }, undefined, scope)).toBeUndefined();
    expect(validateAgentAction({ type: 'x-session/stateReplaced', state: state({ defaultChat: 'ahp-chat:/foreign' }) }, undefined, scope)).toMatch(/defaultChat/);
    expect(validateAgentAction({ type: 'x-session/stateReplaced', state: state({ resource: 'ahp-session:/other' }) }, undefined, scope)).toMatch(/resource/);
    expect(validateAgentAction({ type: 'x-session/stateReplaced', state: state({ chats: [] }) }, undefined, scope)).toMatch(/every chat/);
    expect(validateAgentAction({ type: 'x-session/stateReplaced', state: state({ inputNeeded: [{ kind: 'chatInput', id: 'x', chat: 'ahp-chat:/foreign', requestId: 'r' }] }) }, undefined, scope)).toMatch(/inputNeeded/);
    expect(validateAgentAction({ type: 'session/chatUpdated', chat: 'ahp-chat:/foreign', changes: {} }, undefined, scope)).toMatch(/not a chat of this session/);
    expect(validateAgentAction({ type: 'session/inputNeededSet', request: { kind: 'chatInput', id: 'x', chat: 'ahp-chat:/foreign' } }, undefined, scope)).toMatch(/request.chat/);
    expect(validateAgentAction({ type: 'session/chatAdded', summary: {} }, undefined, scope)).toMatch(/maintained by the hub/);
  });
});

describe('channel size budget', () => {
  it('refuses growth past the limit, measures the real state before refusing, and never refuses shrinking actions', () => {
    let state = { items: [] as string[] };
    const budget = new ChannelSizeBudget({ maxChannelJsonChars: 1_000, maxUserStateChars: 1e9, maxTenantStateChars: 1e9 }, { stateOf: (c) => (c === 'c' ? state : undefined), ownerOf: () => 'alice', channels: () => ['c'] });
    const add = (text: string) => ({ type: 'chat/pendingMessageSet', text });
    expect(budget.charge('c', add('x'.repeat(400)))).toBeUndefined();
    state = { items: ['x'.repeat(400)] };
    expect(budget.charge('c', add('x'.repeat(400)))).toBeUndefined();
    state = { items: ['x'.repeat(400), 'x'.repeat(400)] };
    expect(budget.charge('c', add('x'.repeat(400)))?.reason).toMatch(/channel_too_large/);
    expect(budget.charge('c', { type: 'chat/truncated' })).toBeUndefined();
    // The estimate is only an upper bound: once the state really shrank, growth is allowed again.
    state = { items: [] };
    expect(budget.charge('c', add('x'.repeat(400)))).toBeUndefined();
  });
});
