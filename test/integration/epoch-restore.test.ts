/**
 * A data directory restored from a backup taken before a client's cursor (issue 29 item 3). A
 * real hub process; the data dir is copied aside; the hub runs on, a client reads to serverSeq N
 * and remembers the epoch `initialize` told it; the hub stops; the backup is put back; the hub
 * starts on it and new records take the serverSeqs up to and past N. The client reconnects with
 * its old cursor and epoch: it must get snapshots and equal the hub — a replay from N would hand
 * it records of another history on top of state the hub no longer has. The same for a qwen SSE
 * client resuming with `Last-Event-ID` and `X-Qwen-Event-Epoch`: `state_resync_required`
 * (`epoch_reset`), never the new history's frames as if they followed its own.
 */
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DaemonClient, DaemonSessionClient } from '@qwen-code/sdk';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { AhpClient } from '../../shared/client/ahp-client.js';
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import { chatReducer } from '../../shared/state/chat-reducer.js';
import { sessionReducer } from '../../shared/state/session-reducer.js';
import type { HubProcess } from '../helpers/hub-process.js';
import { RestartRig } from '../helpers/restart-rig.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';

const rig = RestartRig.perTest();
type Frame = { id?: number; type: string; data: any };

const draft = (text: string) => ({ type: 'chat/draftChanged', draft: { text, origin: { kind: 'user' } } });
const script = (steps: unknown[]) => ({ prompt: [{ type: 'text', text: JSON.stringify({ script: steps }) }] });

/** Reads a qwen event stream until `until` matches a frame (or the deadline). */
async function readEvents(client: DaemonClient, sessionId: string, options: { lastEventId?: number; epoch?: string }, until: (f: Frame) => boolean): Promise<{ frames: Frame[]; epoch: string | undefined }> {
  const frames: Frame[] = [];
  let epoch: string | undefined;
  const controller = new AbortController();
  const reading = (async () => {
    try {
      for await (const frame of client.subscribeEvents(sessionId, { ...options, onEpoch: (e) => (epoch = e), signal: controller.signal })) {
        frames.push(frame as Frame);
        if (until(frame as Frame)) break;
      }
    } catch {
      // aborted
    }
  })();
  try {
    await waitFor(() => (frames.some(until) ? true : undefined), { what: 'qwen frames' });
  } finally {
    controller.abort();
    await reading;
  }
  return { frames, epoch };
}

describe('epoch: a data dir restored from an older backup never replays another history', () => {
  it('AHP reconnect with the old cursor and epoch gets snapshots equal to the hub; qwen SSE gets state_resync_required', async () => {
    const dataDir = rig.dataDir('epoch-restore-');
    const backup = rig.dataDir('epoch-backup-');
    const args = ['--data', dataDir];
    let hub: HubProcess = await rig.start(args);
    const alice = await rig.open(hub);
    const { session, chat } = await alice.createSession('before the backup');
    const qwenSession = await DaemonSessionClient.createOrAttach(new DaemonClient({ baseUrl: hub.url }), {});

    // The backup: the data dir as it is now, with the hub stopped (hub.db, -wal and .head together).
    hub = await rig.restart(hub, 'SIGTERM', args);
    cpSync(dataDir, backup, { recursive: true });
    const qwen = new DaemonClient({ baseUrl: hub.url });

    // The history the backup will not have: a reader folds it to seq N.
    const reader = await RpcClient.connect(hub.wsUrl);
    const init = await reader.request<{ serverSeq: number; _meta?: Record<string, unknown> }>('initialize', { channel: 'ahp-root://', protocolVersions: ['1.0.0'], clientId: reader.clientId });
    const epoch = init._meta?.['hub/epoch'];
    const replicas = new Map<string, any>();
    let seen = init.serverSeq;
    for (const ch of [session, chat]) {
      const snap = await reader.subscribe(ch);
      replicas.set(ch, snap.state);
      seen = Math.max(seen, snap.fromSeq);
    }
    const fold = (envelopes: readonly ActionEnvelope[]) => {
      for (const e of envelopes) {
        if (e.serverSeq <= seen || e.rejectionReason !== undefined) continue;
        seen = e.serverSeq;
        const state = replicas.get(e.channel);
        if (state !== undefined) replicas.set(e.channel, e.channel === chat ? chatReducer(state, e.action) : sessionReducer(state, e.action));
      }
    };
    const writer = await rig.open(hub);
    expect((await writer.dispatchAndWait(session, { type: 'session/titleChanged', title: 'lost with the restore' })).rejectionReason).toBeUndefined();
    for (let i = 0; i < 3; i++) expect((await writer.dispatchAndWait(chat, draft(`lost ${i}`))).rejectionReason).toBeUndefined();
    const qwenRun = await qwen.promptNonBlocking(qwenSession.sessionId, script([{ say: 'from the lost history' }]));
    expect(qwenRun.promptId).toBeTruthy();
    const lost = await readEvents(qwen, qwenSession.sessionId, { lastEventId: 0 }, (f) => f.type === 'turn_complete');
    const lastEventId = lost.frames.filter((f) => f.id !== undefined).at(-1)!.id!;
    await writer.request('ping', {});
    await waitFor(() => (reader.envelopes.some((e) => e.channel === chat && (e.action as { draft?: { text: string } }).draft?.text === 'lost 2') ? true : undefined), { what: 'reader caught up' });
    fold(reader.envelopes);
    const cursor = seen;
    await reader.close();

    // Restore the backup and start on it; new records take the serverSeqs past the cursor.
    hub.child.kill('SIGTERM');
    await hub.exited();
    rmSync(dataDir, { recursive: true, force: true });
    cpSync(backup, dataDir, { recursive: true });
    hub = await rig.start(args);
    const after = await rig.open(hub);
    for (let i = 0; ; i++) {
      const echo = await after.dispatchAndWait(chat, draft(`new history ${i}`));
      if (echo.serverSeq > cursor + 2) break;
    }
    const qwenAfter = new DaemonClient({ baseUrl: hub.url });
    await qwenAfter.promptNonBlocking(qwenSession.sessionId, script([{ say: 'new history one' }, { say: 'new history two' }, { say: 'new history three' }]));
    const fresh = await readEvents(qwenAfter, qwenSession.sessionId, { lastEventId: 0 }, (f) => f.type === 'turn_complete');
    expect(fresh.frames.filter((f) => f.id !== undefined).at(-1)!.id!, 'the new history reached the qwen cursor').toBeGreaterThanOrEqual(lastEventId);

    // The reader comes back with its cursor and epoch.
    const back = await RpcClient.connect(hub.wsUrl, { clientId: reader.clientId });
    const resumed = await back.request<any>('reconnect', { channel: 'ahp-root://', clientId: reader.clientId, lastSeenServerSeq: cursor, subscriptions: [session, chat], _meta: { 'hub/epoch': epoch } });
    if (resumed.type === 'snapshot') for (const s of resumed.snapshots) replicas.set(s.resource, s.state);
    else fold(resumed.actions);
    const check = await rig.open(hub);
    expect(replicas.get(session), 'session replica after the reconnect').toEqual((await check.subscribe(session)).state);
    expect(replicas.get(chat), 'chat replica after the reconnect').toEqual((await check.subscribe(chat)).state);
    expect(resumed.type).toBe('snapshot');
    expect(typeof epoch).toBe('string');
    expect(resumed._meta?.['hub/epoch']).not.toBe(epoch);
    await back.close();

    // qwen: Last-Event-ID from the lost history with its epoch → the resync qwen's client expects.
    const stale = await readEvents(qwenAfter, qwenSession.sessionId, { lastEventId, epoch: lost.epoch! }, (f) => f.type === 'state_resync_required');
    expect(stale.frames[0]).toMatchObject({ type: 'state_resync_required', data: { reason: 'epoch_reset', detail: 'epoch_mismatch', lastDeliveredId: lastEventId } });
    expect(stale.epoch).toBe(fresh.epoch);
    expect(stale.epoch).not.toBe(lost.epoch);
  });

  it('the shared client remembers the epoch and, back on the restored hub, resyncs to snapshots by itself', async () => {
    const dataDir = rig.dataDir('epoch-sdk-');
    const backup = join(rig.dataDir('epoch-sdk-backup-'), 'copy');
    const args = ['--data', dataDir];
    let hub = await rig.start(args);
    const alice = await rig.open(hub);
    const { session, chat } = await alice.createSession('before the backup');
    hub = await rig.restart(hub, 'SIGTERM', args);
    cpSync(dataDir, backup, { recursive: true });

    // The socket goes wherever the test says: the hub, or nowhere while the backup is put back.
    let url = hub.wsUrl;
    const client = new AhpClient({ url, createSocket: () => new WebSocket(url), reconnect: { initialDelayMs: 10, maxDelayMs: 50 } });
    try {
      await client.connect();
      const epoch = client.epoch;
      expect(epoch).toEqual(expect.any(String));
      const sessionView = await client.subscribe(session);
      const chatView = await client.subscribe(chat);
      const writer = await rig.open(hub);
      await writer.dispatchAndWait(session, { type: 'session/titleChanged', title: 'lost with the restore' });
      let cursor = 0;
      for (let i = 0; i < 3; i++) cursor = (await writer.dispatchAndWait(chat, draft(`lost ${i}`))).serverSeq;
      await waitFor(() => ((chatView.state as any).draft?.text === 'lost 2' ? true : undefined), { what: 'client caught up' });

      url = 'ws://127.0.0.1:1/ahp';
      hub.child.kill('SIGTERM');
      await hub.exited();
      rmSync(dataDir, { recursive: true, force: true });
      cpSync(backup, dataDir, { recursive: true });
      hub = await rig.start(args);
      const after = await rig.open(hub);
      let last = '';
      for (let i = 0; ; i++) {
        last = `new history ${i}`;
        if ((await after.dispatchAndWait(chat, draft(last))).serverSeq > cursor + 2) break;
      }
      url = hub.wsUrl;
      await waitFor(() => (client.connectionState === 'open' && (chatView.state as any).draft?.text === last ? true : undefined), { what: 'client back on the restored hub', timeoutMs: 20_000 });
      expect(sessionView.state, 'session view').toEqual((await after.subscribe(session)).state);
      expect(chatView.state, 'chat view').toEqual((await after.subscribe(chat)).state);
      expect(client.epoch).not.toBe(epoch);
    } finally {
      client.close();
    }
  });

  it('a cursor beyond the head (restored, nothing new yet) gets snapshots even without an epoch', async () => {
    const dataDir = rig.dataDir('epoch-head-');
    const backup = join(rig.dataDir('epoch-head-backup-'), 'copy');
    const args = ['--data', dataDir];
    let hub = await rig.start(args);
    const alice = await rig.open(hub);
    const { chat } = await alice.createSession('head');
    hub = await rig.restart(hub, 'SIGTERM', args);
    cpSync(dataDir, backup, { recursive: true });
    const reader = await rig.open(hub);
    await reader.subscribe(chat);
    const last = await reader.dispatchAndWait(chat, draft('lost'));
    hub.child.kill('SIGTERM');
    await hub.exited();
    rmSync(dataDir, { recursive: true, force: true });
    cpSync(backup, dataDir, { recursive: true });
    hub = await rig.start(args);
    const back = await RpcClient.connect(hub.wsUrl, { clientId: reader.clientId });
    const resumed = await back.request<any>('reconnect', { channel: 'ahp-root://', clientId: reader.clientId, lastSeenServerSeq: last.serverSeq, subscriptions: [chat] });
    expect(resumed.type).toBe('snapshot');
    expect(resumed.snapshots[0].state.draft).toBeUndefined();
    await back.close();
  });
});
