import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import { startScriptTurn, userMessage } from '../helpers/turns.js';

interface Part {
  kind: string;
  content?: string;
  toolCall?: { status: string; toolCallId: string };
  request?: { id: string; questions?: Array<{ kind: string }> };
}
interface Chat {
  activeTurn?: { id: string; responseParts: Part[] };
  turns: Array<{ state: string; responseParts: Part[] }>;
}

describe('the demo agent', () => {
  let server: TestServer;
  let client: RpcClient;
  let chat: string;
  beforeEach(async () => {
    server = await startTestServer();
    client = await RpcClient.open(server.wsUrl);
    chat = (await client.createSession()).chat;
    await client.subscribe(chat);
  });
  afterEach(async () => {
    await client.close();
    await server.stop();
  });

  it('streams a say step as one markdown part built from deltas', async () => {
    await startScriptTurn(client, chat, [{ say: 'Hello there, this is a longer sentence that arrives in several chunks.' }]);
    await client.waitForEnvelope((e) => e.action.type === 'chat/turnComplete');
    // The chunks are dispatched together, so the hub folds them into one record (the ingest merge
    // rule, commit-pipeline.ts): what arrives as deltas adds up to the text either way.
    const deltas = client.envelopes.filter((e) => e.action.type === 'chat/delta');
    expect(deltas.length).toBeGreaterThanOrEqual(1);
    expect(deltas.map((e) => (e.action as unknown as { content: string }).content).join('')).toBe('Hello there, this is a longer sentence that arrives in several chunks.');
    const state = (await client.subscribe<Chat>(chat)).state;
    expect(state.turns[0]!.responseParts).toEqual([expect.objectContaining({ kind: 'markdown', content: 'Hello there, this is a longer sentence that arrives in several chunks.' })]);
  });

  it('runs a tool with confirmation, waiting for chat/toolCallConfirmed', async () => {
    const turnId = await startScriptTurn(client, chat, [
      {
        tool: {
          id: 'tool-1',
          name: 'deploy',
          input: { env: 'prod' },
          confirm: true,
          options: [
            { id: 'yes', label: 'Deploy', kind: 'approve' },
            { id: 'no', label: 'Stop', kind: 'deny' },
          ],
        },
      },
    ]);
    await client.waitForEnvelope((e) => e.action.type === 'chat/toolCallReady');
    const pending = (await client.subscribe<Chat>(chat)).state.activeTurn!.responseParts[0]!;
    expect(pending.toolCall!.status).toBe('pending-confirmation');
    const echo = await client.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'tool-1', approved: true, confirmed: 'user-action', selectedOptionId: 'yes' });
    expect(echo.rejectionReason).toBeUndefined();
    await client.waitForEnvelope((e) => e.action.type === 'chat/turnComplete');
    const done = (await client.subscribe<Chat>(chat)).state.turns[0]!.responseParts[0]!;
    expect(done.toolCall!.status).toBe('completed');
  });

  it('a denied tool is reported and not run', async () => {
    const turnId = await startScriptTurn(client, chat, [{ tool: { id: 'tool-2', name: 'rm', confirm: true } }]);
    await client.waitForEnvelope((e) => e.action.type === 'chat/toolCallReady');
    await client.dispatchAndWait(chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'tool-2', approved: false, reason: 'denied' });
    await client.waitForEnvelope((e) => e.action.type === 'chat/turnComplete');
    const parts = (await client.subscribe<Chat>(chat)).state.turns[0]!.responseParts;
    expect(parts[0]!.toolCall!.status).toBe('cancelled');
    expect(parts.some((p) => p.content?.includes('was not run'))).toBe(true);
  });

  it('a fail step ends the turn with chat/error and a broken script is refused the same way', async () => {
    await startScriptTurn(client, chat, [{ fail: 'boom' }]);
    const err = await client.waitForEnvelope((e) => e.action.type === 'chat/error');
    expect(JSON.stringify(err.action)).toContain('boom');
    await client.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId: 'bad-script', startedAt: new Date().toISOString(), message: userMessage('{"script":[{"dance":1}]}') });
    const bad = await client.waitForEnvelope((e) => e.action.type === 'chat/error' && e.action['turnId'] === 'bad-script');
    expect(JSON.stringify(bad.action)).toContain('invalid script');
  });

  it('any other text runs the tour, which asks every question kind', async () => {
    await client.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId: 'tour', startedAt: new Date().toISOString(), message: userMessage('show me') });
    const asked = await client.waitForEnvelope((e) => e.action.type === 'chat/inputRequested');
    const kinds = (asked.action['request'] as { questions: Array<{ kind: string }> }).questions.map((q) => q.kind);
    expect(new Set(kinds)).toEqual(new Set(['text', 'number', 'integer', 'boolean', 'single-select', 'multi-select']));
    // Cancelling the turn stops the agent: nothing more is streamed into it.
    await client.dispatchAndWait(chat, { type: 'chat/turnCancelled', turnId: 'tour', duration: 1 });
    const state = (await client.subscribe<Chat>(chat)).state;
    expect(state.activeTurn).toBeUndefined();
    expect(state.turns[0]!.state).toBe('cancelled');
  });
});
