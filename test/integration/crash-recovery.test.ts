import { afterEach, describe, expect, it } from 'vitest';
import { SqliteActionLog } from '../../server/storage/sqlite-action-log.js';
import type { ChatState } from '../../shared/protocol/state.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { tempDir } from '../helpers/start-server.js';
import { startScriptTurn, TWO_QUESTION_REQUEST } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { tenantLogFile } from '../../server/storage/tenant-logs.js';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';

/** The dev tenant's log file in a data directory (dev mode has one tenant). */
const devLogFile = (dataDir: string): string => tenantLogFile(dataDir, DEV_PRINCIPAL.tenant);

describe('durable log: SIGKILL and restart', () => {
  const dirs: Array<{ remove(): void }> = [];
  const procs: HubProcess[] = [];
  afterEach(() => {
    for (const p of procs.splice(0)) p.child.kill('SIGKILL');
    for (const d of dirs.splice(0)) d.remove();
  });

  it('loses no echoed action, keeps serverSeq increasing and keeps the running turn open with its drafts', async () => {
    const data = tempDir();
    dirs.push(data);
    const first = await startHubProcess(['--data', data.dir]);
    procs.push(first);
    const client = await RpcClient.open(first.wsUrl);
    const { chat } = await client.createSession('crash');
    const initial = await client.subscribe<ChatState>(chat);
    await startScriptTurn(client, chat, [{ ask: TWO_QUESTION_REQUEST }, { sleep: 600_000 }]);
    await client.waitForEnvelope((e) => e.action.type === 'chat/inputRequested');

    // Stream drafts without waiting, then kill the hub while they are still arriving.
    for (let i = 0; i < 200; i++) {
      client.dispatch(chat, {
        type: 'chat/inputAnswerChanged',
        requestId: 'req-1',
        questionId: 'notes',
        answer: { state: 'draft', value: { kind: 'text', value: `draft ${i}` } },
      });
    }
    await waitFor(() => (client.envelopes.filter((e) => e.action.type === 'chat/inputAnswerChanged').length >= 20 ? true : undefined));
    first.child.kill('SIGKILL');
    expect((await first.exited()).signal).toBe('SIGKILL');
    await waitFor(() => (client.closed ? true : undefined));
    const echoed = client.envelopes.filter((e) => e.channel === chat);
    const lastSeen = Math.max(...client.envelopes.map((e) => e.serverSeq));
    // What this client knew when the hub died: its snapshot plus every envelope it received.
    const known = echoed.filter((e) => e.serverSeq > initial.fromSeq).reduce((s, e) => chatReducer(s, e.action), initial.state);

    // Every echoed envelope is in the log, byte for byte the same action under the same seq.
    const log = SqliteActionLog.open({ file: devLogFile(data.dir) });
    const stored = new Map((await log.read(0, 1_000_000)).map((r) => [r.serverSeq, r]));
    await log.close();
    for (const e of echoed) {
      expect(stored.get(e.serverSeq)?.action).toEqual(e.action);
      // The stored origin also names the actor (for the duplicate ledger); envelopes never carry it.
      if (e.origin) {
        expect(stored.get(e.serverSeq)?.origin).toMatchObject(e.origin);
        expect(e.origin).not.toHaveProperty('actor');
      } else {
        expect(stored.get(e.serverSeq)?.origin).toBeUndefined();
      }
    }

    const second = await startHubProcess(['--data', data.dir]);
    procs.push(second);
    // A fresh client reads the whole state: every echoed draft is there, ending with the last echoed.
    const reader = await RpcClient.open(second.wsUrl);
    const snap = await reader.subscribe<{
      status: number;
      activeTurn?: { responseParts: Array<{ kind: string; response?: string; request?: { answers?: Record<string, { value: { value: string } }> } }> };
      turns: Array<{ state: string; error?: { errorType?: string; message?: string }; responseParts: Array<{ kind: string; request?: { answers?: Record<string, { value: { value: string } }> } }> }>;
    }>(chat);
    const lastDraft = [...echoed].reverse().find((e) => e.action.type === 'chat/inputAnswerChanged')!;
    const lastDraftText = (lastDraft.action['answer'] as { value: { value: string } }).value.value;
    const draftIndex = (t: string) => Number(t.split(' ')[1]);
    // The turn that was running carries on (the demo agent resumes from the log): the request is
    // still open and holds the drafts (docs/continuity.md, "Turns").
    expect(snap.state.activeTurn).toBeDefined();
    const request = snap.state.activeTurn!.responseParts.find((p) => p.kind === 'inputRequest')!;
    expect(request.response).toBeUndefined();
    const storedDraft = request.request!.answers!['notes']!.value.value;
    expect(draftIndex(storedDraft)).toBeGreaterThanOrEqual(draftIndex(lastDraftText));
    expect(snap.fromSeq).toBeGreaterThan(lastSeen);

    // The original client reconnects with its clientId and lastSeenServerSeq and converges.
    const back = await RpcClient.connect(second.wsUrl, { clientId: client.clientId });
    await back.initialize();
    const result = await back.request<{ type: string; actions?: ActionEnvelope[]; snapshots?: unknown[]; missing: string[] }>('reconnect', {
      channel: 'ahp-root://',
      clientId: client.clientId,
      lastSeenServerSeq: lastSeen,
      subscriptions: [chat, 'ahp-chat:/gone'],
    });
    expect(result.missing).toEqual(['ahp-chat:/gone']);
    // Applying the result to what the client knew gives exactly the hub's state after the restart.
    const now = await reader.subscribe<ChatState>(chat);
    const converged =
      result.type === 'replay'
        ? result.actions!.filter((a) => a.channel === chat).reduce((s, e) => chatReducer(s, e.action), known)
        : (result.snapshots as Array<{ resource: string; state: ChatState }>).find((x) => x.resource === chat)!.state;
    expect(converged).toEqual(now.state);
    if (result.type === 'replay') {
      expect(result.actions!.every((a) => a.serverSeq > lastSeen)).toBe(true);
      expect(result.actions!.some((a) => a.action.type === 'chat/error')).toBe(false);
    }
    await reader.close();
    await back.close();
  });
});
