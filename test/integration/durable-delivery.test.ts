/**
 * Durable before delivered, on the surfaces other than WebSocket: an SSE frame (DataWorks events
 * and qwen events) and a hosted ACP agent's permission answer leave the process only after the
 * record they are about is appended to the real SQLite log.
 *
 * The probe: every append of the SQLite log is held at a gate the test opens, and records when it
 * completed; every write to a socket or pipe is watched for the frame in question. While the
 * append is held the hub has every chance to send (the test waits until the frame shows up, or
 * 1.5 s); the frame must come after the append completed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEV_PRINCIPAL } from '../../server/auth/auth.js';
import type { LogRecord } from '../../server/storage/action-log.js';
import { SqliteActionLog } from '../../server/storage/sqlite-action-log.js';
import { acpConfig, capturingLogger, createSessionWith, script, startAcpHub, startTurn, waitForTool } from '../acp/support.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { sessionIdOfUri, SseClient } from '../helpers/sse.js';
import type { TestServer } from '../helpers/start-server.js';
import { waitFor } from '../helpers/wait-for.js';

type Step = { readonly kind: 'appended'; readonly records: readonly LogRecord[] } | { readonly kind: 'write'; readonly frame: string };

/** Holds SQLite appends at a gate and records, in one list, completed appends and watched writes. */
function probe(frames: Record<string, (text: string) => boolean>) {
  const steps: Step[] = [];
  const entered: LogRecord[] = [];
  let gate: Promise<void> | undefined;
  let open: (() => void) | undefined;
  const append = SqliteActionLog.prototype.append;
  vi.spyOn(SqliteActionLog.prototype, 'append').mockImplementation(async function (this: SqliteActionLog, head: number, records: readonly LogRecord[]) {
    entered.push(...records);
    if (gate) await gate;
    const result = await append.call(this, head, records);
    steps.push({ kind: 'appended', records: [...records] });
    return result;
  });
  // Every socket and pipe (HTTP responses, an agent's stdin) hands its bytes to the OS here.
  const socketProto = Socket.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const writeGeneric = socketProto['_writeGeneric']!;
  vi.spyOn(socketProto, '_writeGeneric').mockImplementation(function (this: Socket, writev: unknown, data: unknown, ...rest: unknown[]) {
    const chunks = writev ? (data as Array<{ chunk: unknown }>).map((c) => c.chunk) : [data];
    const text = chunks.map((c) => (typeof c === 'string' ? c : c instanceof Uint8Array ? Buffer.from(c).toString('utf8') : '')).join('');
    for (const [frame, matches] of Object.entries(frames)) if (matches(text)) steps.push({ kind: 'write', frame });
    return writeGeneric.call(this, writev, data, ...rest);
  });
  return {
    steps,
    hold(): void {
      gate = new Promise((resolve) => (open = resolve));
    },
    release(): void {
      gate = undefined;
      open?.();
    },
    /** Waits until a record matching `is` is being appended (sequenced, its commit phase over). */
    entered: (is: (r: LogRecord) => boolean) => waitFor(() => entered.some(is) || undefined, { what: 'the record to reach the log' }),
    written: (frame: string) => steps.some((s) => s.kind === 'write' && s.frame === frame),
    /** Position of the append that completed the record, and of every write of `frame`. */
    order(is: (r: LogRecord) => boolean, frame: string): { appendedAt: number; writtenAt: number[] } {
      return {
        appendedAt: steps.findIndex((s) => s.kind === 'appended' && s.records.some(is)),
        writtenAt: steps.flatMap((s, i) => (s.kind === 'write' && s.frame === frame ? [i] : [])),
      };
    },
  };
}

/** Gives the hub every chance to send while the append is held: until `frame` is written, or 1.5 s. */
async function whileHeld(sent: () => boolean): Promise<void> {
  await waitFor(() => sent() || undefined, { timeoutMs: 1_500 }).catch(() => undefined);
}

const actionField = (r: LogRecord, key: string): unknown => (r.action as Record<string, unknown>)[key];

describe('durable before delivered: SSE streams and agent answers', () => {
  const closers: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const close of closers.splice(0).reverse()) await close();
  });

  function dataDir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'durable-delivery-'));
    closers.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  async function hub(agents: Parameters<typeof startAcpHub>[0] = []): Promise<TestServer> {
    const { server } = await startAcpHub(agents, capturingLogger(), { dataDir: dataDir() });
    closers.push(() => server.close());
    return server;
  }

  it('writes a DataWorks event and a qwen event for an action only after its record is in the SQLite log', async () => {
    const marker = 'probe-tool-sse';
    const p = probe({
      dataworks: (t) => t.includes(marker) && t.includes('"method":"session/update"'),
      qwen: (t) => t.includes(marker) && t.includes('"type":"session_update"'),
    });
    const server = await hub();
    const tab = await RpcClient.open(server.wsUrl);
    closers.push(() => tab.close());
    const { session, chat } = await createSessionWith(tab, 'remote');
    const sessionId = sessionIdOfUri(session);
    const dataworks = await SseClient.open(`${server.url}/v2/sessions/${sessionId}/events`);
    const qwen = await SseClient.open(`${server.url}/session/${sessionId}/events`);
    closers.push(
      () => dataworks.close(),
      () => qwen.close(),
    );
    const turnId = await startTurn(tab, chat, 'probe');
    await dataworks.waitForEvent((e) => e.data?.params?.update?.sessionUpdate === 'user_message_chunk', 'the turn start on the DataWorks stream');

    p.hold();
    const isTool = (r: LogRecord): boolean => actionField(r, 'toolCallId') === marker;
    const committed = server.hub.dispatchServer(chat, { type: 'chat/toolCallStart', turnId, toolCallId: marker, toolName: 'probe', displayName: 'Probe' });
    await p.entered(isTool);
    await whileHeld(() => p.written('dataworks') && p.written('qwen'));
    p.release();
    await committed;
    await dataworks.waitForEvent((e) => e.raw.includes(marker), 'the tool call on the DataWorks stream');
    await qwen.waitForEvent((e) => e.raw.includes(marker), 'the tool call on the qwen stream');

    for (const frame of ['dataworks', 'qwen']) {
      const { appendedAt, writtenAt } = p.order(isTool, frame);
      expect(appendedAt, 'the record was appended').toBeGreaterThanOrEqual(0);
      expect(writtenAt.length, `${frame} frame written`).toBeGreaterThan(0);
      expect(Math.min(...writtenAt), `${frame} frame written after the append`).toBeGreaterThan(appendedAt);
    }
  });

  it("answers a hosted ACP agent's permission request only after the decision is in the SQLite log", async () => {
    const work = dataDir();
    const server = await hub([{ provider: 'scripted', config: acpConfig({ cwd: work }) }]);
    const p = probe({
      // The JSON-RPC response to the agent's session/request_permission (nothing else carries
      // `result` with this option id and no method).
      agent: (t) => t.includes('"result"') && t.includes('probe-yes') && !t.includes('"method"'),
    });
    const tab = await RpcClient.open(server.wsUrl);
    closers.push(() => tab.close());
    const { chat } = await createSessionWith(tab, 'scripted');
    await tab.subscribe(chat);
    const options = [
      { optionId: 'probe-yes', name: 'Allow', kind: 'allow_once' },
      { optionId: 'probe-no', name: 'Reject', kind: 'reject_once' },
    ];
    const turnId = await startTurn(tab, chat, script({ permission: { toolCall: { toolCallId: 'perm-probe', title: 'touch x', kind: 'edit', status: 'pending' }, options } }));
    await waitForTool(server, chat, turnId, 'perm-probe', 'pending-confirmation');

    p.hold();
    const isDecision = (r: LogRecord): boolean => r.action.type === 'chat/toolCallConfirmed' && actionField(r, 'toolCallId') === 'perm-probe';
    const answered = server.hub.submitAs(DEV_PRINCIPAL, chat, { type: 'chat/toolCallConfirmed', turnId, toolCallId: 'perm-probe', approved: true, confirmed: 'user-action', selectedOptionId: 'probe-yes' });
    await p.entered(isDecision);
    await whileHeld(() => p.written('agent'));
    p.release();
    expect(await answered).toMatchObject({ ok: true });
    await waitFor(() => p.written('agent') || undefined, { what: 'the agent to get its answer' });

    const { appendedAt, writtenAt } = p.order(isDecision, 'agent');
    expect(appendedAt, 'the decision was appended').toBeGreaterThanOrEqual(0);
    expect(Math.min(...writtenAt), 'the answer written to the agent after the append').toBeGreaterThan(appendedAt);
  });
});
