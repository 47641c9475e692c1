/**
 * The agent spawn flood (issue 18, item 2), one driver for the soak phase (scripts/soak-floods.ts)
 * and its test (test/acp/agent-spawn-flood.test.ts): one user starts a turn in each of many
 * sessions of an ACP agent that never answers, and the driver waits until every turn either
 * holds an agent process or ended with a named error.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { FloodClient } from './soak-state-flood.js';

/** An agent that reads stdin and never answers: each start holds its process until the hub ends it (closing its stdin). */
export const SILENT_AGENT = { kind: 'acp', command: 'sh', args: ['-c', 'cat > /dev/null; exit 0'], startupTimeoutMs: 600_000 };

/** Processes whose parent is `pid` (the hub's agents). */
export function childrenOf(pid: number): number {
  let n = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
}

/** The hub process as far as the flood needs it (soak.ts's hub and the tests' `HubProcess` both fit). */
export interface FloodedHub {
  readonly wsUrl: string;
  readonly child: { readonly pid?: number | undefined; readonly exitCode: number | null };
}

export interface SpawnFloodOutcome {
  /** The client that started the turns (still open: the caller closes it). */
  readonly client: FloodClient;
  /** Each chat whose turn ended with an error, with its `errorType`. */
  readonly errors: Map<string, string>;
  /** False when the deadline passed before every turn had an agent or an error. */
  readonly settled: boolean;
}

/**
 * Creates `sessions` sessions of provider `silent` (the agents file must name it), starts a turn in
 * each at once, then polls until errors + the hub's child processes cover every turn, the hub
 * exits, or `timeoutMs` passes.
 */
export async function floodAgentTurns(hub: FloodedHub, sessions: number, timeoutMs: number): Promise<SpawnFloodOutcome> {
  const client = await FloodClient.open(hub.wsUrl);
  const errors = new Map<string, string>();
  client.onAction = (e) => {
    const error = e.action['error'] as { errorType?: string } | undefined;
    if (e.action.type === 'chat/error' && error?.errorType) errors.set(e.channel, error.errorType);
  };
  const chats: string[] = [];
  for (let i = 0; i < sessions; i++) {
    const created = await client.request('createSession', { channel: `ahp-session:/spawn-${i}`, provider: 'silent' });
    if (created.error) throw new Error(`spawn flood: createSession ${i}: ${created.error.message}`);
    const chat = (created.result as { defaultChat: string }).defaultChat;
    await client.request('subscribe', { channel: chat });
    chats.push(chat);
  }
  await Promise.all(chats.map((chat) => client.dispatch(chat, { type: 'chat/turnStarted', turnId: `t-${randomUUID()}`, startedAt: new Date().toISOString(), message: { text: 'hi', origin: { kind: 'user' } } })));
  const covered = () => errors.size + childrenOf(hub.child.pid!) >= sessions;
  const deadline = performance.now() + timeoutMs;
  while (hub.child.exitCode === null && !covered() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return { client, errors, settled: hub.child.exitCode !== null || covered() };
}
