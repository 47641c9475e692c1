/**
 * One user starting turns in hundreds of sessions (issue 18, item 2): under `ulimit -n 1024` the
 * hub used to start one agent process per session until `spawn … EMFILE` ended it. Now the
 * processes are capped (refusals named `agentLimitReached`), and a spawn that fails for lack of
 * descriptors fails that turn (`agentStartFailed`) instead of the hub. The hub runs as a real
 * child process; its agents read stdin and never answer, so each start holds its slot (they exit when the hub closes their stdin).
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { RpcClient } from '../helpers/rpc-client.js';
import { tempDir } from '../helpers/start-server.js';
import { userMessage } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

const SESSIONS = 400;
let hub: HubProcess | undefined;
let client: RpcClient | undefined;
const dirs: Array<{ remove(): void }> = [];

afterEach(async () => {
  await client?.close();
  client = undefined;
  if (hub && hub.child.exitCode === null) hub.child.kill('SIGTERM');
  await hub?.exited();
  hub = undefined;
  for (const d of dirs.splice(0)) d.remove();
});

/** Processes whose parent is `pid` (the hub's agents). */
function childrenOf(pid: number): number {
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

async function flood(agentsFile: object): Promise<{ errors: Map<string, string>; hub: HubProcess }> {
  const dir = tempDir('agent-flood-');
  dirs.push(dir);
  const file = join(dir.dir, 'agents.json');
  writeFileSync(file, JSON.stringify(agentsFile));
  hub = await startHubProcess(['--data', join(dir.dir, 'data'), '--agents', file], { openFiles: 1024 });
  client = await RpcClient.open(hub.wsUrl);
  const chats: string[] = [];
  for (let i = 0; i < SESSIONS; i++) {
    const session = `ahp-session:/flood-${i}`;
    const { defaultChat } = await client.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'silent' });
    await client.subscribe(defaultChat);
    chats.push(defaultChat);
  }
  for (const chat of chats) client.dispatch(chat, { type: 'chat/turnStarted', turnId: `t-${chat}`, startedAt: new Date().toISOString(), message: userMessage('hi') });
  const errors = new Map<string, string>();
  const c = client;
  // Every turn either holds an agent that is starting, or ended with a named error.
  await waitFor(
    () => {
      for (const e of c.envelopes) {
        const a = e.action as { type: string; error?: { errorType: string } };
        if (a.type === 'chat/error' && a.error) errors.set(e.channel, a.error.errorType);
      }
      return hub!.child.exitCode !== null || errors.size + childrenOf(hub!.child.pid!) >= SESSIONS ? true : undefined;
    },
    { what: 'every turn to start an agent or be refused', timeoutMs: 60_000 },
  );
  return { errors, hub };
}

async function healthz(h: HubProcess): Promise<number> {
  return (await fetch(`${h.url}/healthz`)).status;
}

const silent = { kind: 'acp', command: 'sh', args: ['-c', 'cat > /dev/null; exit 0'], startupTimeoutMs: 600_000 };

it('a spawn flood from one user is capped at the per-user limit with named refusals, and the hub stays up under ulimit -n 1024', async () => {
  const { errors, hub: h } = await flood({ agents: { silent } });
  expect(h.child.exitCode, h.stderr().slice(-2000)).toBeNull();
  expect(await healthz(h)).toBe(200);
  // Default caps: 8 processes per user (dev mode has one user).
  expect(childrenOf(h.child.pid!), JSON.stringify([...new Set(errors.values())]) + h.stderr().slice(-3000)).toBe(8);
  expect(errors.size).toBe(SESSIONS - 8);
  expect(new Set(errors.values())).toEqual(new Set(['agentLimitReached']));
  const metrics = await (await fetch(`${h.url}/metrics`)).text();
  expect(metrics).toMatch(/^ahp_hub_agent_processes 8$/m);
  expect(metrics).toMatch(new RegExp(`^ahp_hub_agent_start_refusals ${SESSIONS - 8}$`, 'm'));
}, 120_000);

it('with caps above what the descriptors allow, spawns that hit EMFILE fail their turn (agentStartFailed) and the hub stays up', async () => {
  const { errors, hub: h } = await flood({ agents: { silent }, limits: { maxProcesses: 5_000, maxProcessesPerTenant: 5_000, maxProcessesPerUser: 5_000 } });
  expect(h.child.exitCode, h.stderr().slice(-2000)).toBeNull();
  expect(await healthz(h)).toBe(200);
  const failed = [...errors.values()];
  expect(failed.length).toBeGreaterThan(0);
  expect(new Set(failed)).toEqual(new Set(['agentStartFailed']));
  expect(h.stdout() + h.stderr()).toMatch(/EMFILE|ENFILE/);
  const metrics = await (await fetch(`${h.url}/metrics`)).text();
  expect(metrics).toMatch(new RegExp(`^ahp_hub_agent_start_failures ${failed.length}$`, 'm'));
}, 120_000);
