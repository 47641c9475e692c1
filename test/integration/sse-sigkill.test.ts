/**
 * An SSE watcher that prints each event, with the hub SIGKILLed right after events arrive, many
 * times (SSE_KILL_CYCLES, default 50): every event it printed is in the log after the restart.
 *
 * Each cycle starts the real hub (`node dist/server/main.js`) on the same data directory — which
 * is also the restart of the previous cycle — opens the session's DataWorks event stream with a
 * raw HTTP reader, floods the chat with turn starts and cancels from a WebSocket client, and
 * SIGKILLs the hub from inside the reader's `data` callback as soon as the flood's first events
 * arrive (no polling delay between "printed" and "killed"). Then the tenant's SQLite log is read:
 * every `user_message_chunk` the watcher printed must be a stored `chat/turnStarted` with that
 * text, every `turn_end` a stored end of that turn. The last restart must serve them too.
 */
import { request, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import { SqliteActionLog } from '../../server/storage/sqlite-action-log.js';
import { tenantLogFile } from '../../server/storage/tenant-logs.js';
import type { ChatState } from '../../shared/protocol/state.js';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { sessionIdOfUri } from '../helpers/sse.js';
import { tempDir } from '../helpers/start-server.js';
import { userMessage } from '../helpers/turns.js';

const CYCLES = Number(process.env['SSE_KILL_CYCLES'] ?? 50);
/** Turn start + cancel pairs sent per cycle without waiting (the hub is killed long before the end). */
const FLOOD = 400;

interface Printed {
  readonly kind: 'prompt' | 'turnEnd';
  /** The prompt text, or the ended turn's id. */
  readonly value: string;
}

/** Reads an SSE response as raw chunks; calls `onEvent` synchronously for each complete event. */
function watch(url: string, onEvent: (data: Record<string, any>) => void): Promise<IncomingMessage> {
  // eslint-disable-line @typescript-eslint/no-explicit-any
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: 'text/event-stream' } }, (res) => {
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        for (let sep = buffer.indexOf('\n\n'); sep !== -1; sep = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, sep);
          buffer = buffer.slice(sep + 2);
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trim())
            .join('\n');
          if (data) onEvent(JSON.parse(data) as Record<string, any>); // eslint-disable-line @typescript-eslint/no-explicit-any
        }
      });
      res.on('error', () => undefined);
      resolve(res);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('SSE watcher across SIGKILL', () => {
  const data = tempDir('sse-sigkill-');
  let hub: HubProcess | undefined;
  let client: RpcClient | undefined;
  afterEach(async () => {
    await client?.close();
    hub?.child.kill('SIGKILL');
    await hub?.exited();
    data.remove();
  });

  it(`every event a watcher printed before the hub was SIGKILLed is in the log, ${CYCLES} times`, async () => {
    let session: string | undefined;
    let chat: string | undefined;
    /** Turn ids of every printed event, over all cycles. */
    const printedTurns = new Set<string>();
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      hub = await startHubProcess(['--data', data.dir]).catch((err: unknown) => {
        throw new Error(`cycle ${cycle}: ${err instanceof Error ? err.message : String(err)}`);
      });
      client = await RpcClient.open(hub.wsUrl);
      if (!session) {
        const uri = `ahp-session:/sse-sigkill`;
        chat = (await client.request<{ defaultChat: string }>('createSession', { channel: uri, provider: 'remote' })).defaultChat;
        session = uri;
      }
      // A turn left running by the previous kill (if the restart kept it) is cancelled first.
      const snap = await client.subscribe<ChatState>(chat!);
      const running = snap.state.activeTurn?.id;
      if (running) await client.dispatchAndWait(chat!, { type: 'chat/turnCancelled', turnId: running, duration: 1 });

      const printed: Printed[] = [];
      const victim = hub;
      const prefix = `c${cycle}-`;
      const stream = await watch(`${hub.url}/v2/sessions/${sessionIdOfUri(session)}/events`, (event) => {
        const update = event['params']?.update;
        const notify = event['method'] === '_hub/notify' ? event['params'] : undefined;
        if (update?.sessionUpdate === 'user_message_chunk' && String(update.content?.text).startsWith(prefix)) printed.push({ kind: 'prompt', value: update.content.text });
        else if (notify?.kind === 'turn_end' && String(notify.data?.turnId).startsWith(prefix)) printed.push({ kind: 'turnEnd', value: notify.data.turnId });
        else return;
        // Right after events arrive: the hub dies before anything else happens in this process.
        if (printed.length === 3) victim.child.kill('SIGKILL');
      });
      for (let i = 0; i < FLOOD; i++) {
        const turnId = `${prefix}t${i}`;
        client.dispatch(chat!, { type: 'chat/turnStarted', turnId, startedAt: new Date().toISOString(), message: userMessage(`${prefix}m${i}`) });
        client.dispatch(chat!, { type: 'chat/turnCancelled', turnId, duration: 1 });
      }
      expect((await victim.exited()).signal, 'the hub was SIGKILLed').toBe('SIGKILL');
      stream.destroy();
      await client.close();
      client = undefined;
      hub = undefined;

      const log = SqliteActionLog.open({ file: tenantLogFile(data.dir, DEV_PRINCIPAL.tenant) });
      const records = await log.read(0, Number.MAX_SAFE_INTEGER);
      await log.close();
      const prompts = new Set<string>();
      const ended = new Set<string>();
      for (const r of records) {
        const a = r.action as { type: string; turnId?: string; message?: { text?: string } };
        if (a.type === 'chat/turnStarted' && a.message?.text) prompts.add(a.message.text);
        if ((a.type === 'chat/turnCancelled' || a.type === 'chat/error') && a.turnId) ended.add(a.turnId);
      }
      const missing = printed.filter((p) => !(p.kind === 'prompt' ? prompts : ended).has(p.value));
      expect(missing, `cycle ${cycle}: printed events missing from the log`).toEqual([]);
      expect(printed.length, `cycle ${cycle}: the watcher printed events before the kill`).toBeGreaterThan(0);
      for (const p of printed) printedTurns.add(p.kind === 'turnEnd' ? p.value : p.value.replace(/-m(\d+)$/, '-t$1'));
    }

    // The last restart serves every printed turn.
    hub = await startHubProcess(['--data', data.dir]);
    client = await RpcClient.open(hub.wsUrl);
    const final = await client.subscribe<ChatState>(chat!);
    const served = new Set([...final.state.turns.map((t) => t.id), final.state.activeTurn?.id]);
    expect([...printedTurns].filter((t) => !served.has(t))).toEqual([]);
    process.stdout.write(`sse-sigkill: ${CYCLES} cycles, ${printedTurns.size} printed turns, all in the log\n`);
  }, 600_000);
});
