/**
 * One user starting turns in hundreds of sessions (issue 18, item 2): under `ulimit -n 1024` the
 * hub used to start one agent process per session until `spawn … EMFILE` ended it. Now the
 * processes are capped (refusals named `agentLimitReached`), and a spawn that fails for lack of
 * descriptors fails that turn (`agentStartFailed`) instead of the hub. The hub runs as a real
 * child process; its agents read stdin and never answer, so each start holds its slot (they exit when the hub closes their stdin).
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { childrenOf, floodAgentTurns, SILENT_AGENT } from '../../scripts/spawn-flood.js';
import type { FloodClient } from '../../scripts/soak-state-flood.js';
import { startHubProcess, type HubProcess } from '../helpers/hub-process.js';
import { tempDir } from '../helpers/start-server.js';

const SESSIONS = 400;
let hub: HubProcess | undefined;
let client: FloodClient | undefined;
const dirs: Array<{ remove(): void }> = [];

afterEach(async () => {
  client?.ws.terminate();
  client = undefined;
  if (hub && hub.child.exitCode === null) hub.child.kill('SIGTERM');
  await hub?.exited();
  hub = undefined;
  for (const d of dirs.splice(0)) d.remove();
});

/** The shared flood driver (scripts/spawn-flood.ts, also the soak's) against a hub under `ulimit -n 1024`. */
async function flood(agentsFile: object): Promise<{ errors: Map<string, string>; hub: HubProcess }> {
  const dir = tempDir('agent-flood-');
  dirs.push(dir);
  // The agents run confined (a uid of the tenant's own): they pass through to their directories.
  chmodSync(dir.dir, 0o711);
  const file = join(dir.dir, 'agents.json');
  writeFileSync(file, JSON.stringify(agentsFile));
  const h = await startHubProcess(['--data', join(dir.dir, 'data'), '--agents', file], { openFiles: 1024 });
  hub = h;
  const outcome = await floodAgentTurns(h, SESSIONS, 60_000);
  client = outcome.client;
  expect(outcome.settled, `every turn to start an agent or be refused within 60 s (${outcome.errors.size} refused, ${childrenOf(h.child.pid!)} agents)`).toBe(true);
  return { errors: outcome.errors, hub: h };
}

async function healthz(h: HubProcess): Promise<number> {
  return (await fetch(`${h.url}/healthz`)).status;
}

it('a spawn flood from one user is capped at the per-user limit with named refusals, and the hub stays up under ulimit -n 1024', async () => {
  const { errors, hub: h } = await flood({ agents: { silent: SILENT_AGENT } });
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
  const { errors, hub: h } = await flood({ agents: { silent: SILENT_AGENT }, limits: { maxProcesses: 5_000, maxProcessesPerTenant: 5_000, maxProcessesPerUser: 5_000 } });
  expect(h.child.exitCode, h.stderr().slice(-2000)).toBeNull();
  expect(await healthz(h)).toBe(200);
  const failed = [...errors.values()];
  expect(failed.length).toBeGreaterThan(0);
  expect(new Set(failed)).toEqual(new Set(['agentStartFailed']));
  expect(h.stdout() + h.stderr()).toMatch(/EMFILE|ENFILE/);
  const metrics = await (await fetch(`${h.url}/metrics`)).text();
  expect(metrics).toMatch(new RegExp(`^ahp_hub_agent_start_failures ${failed.length}$`, 'm'));
}, 120_000);
