/**
 * The pieces of agent confinement on their own (server/agents/agent-confinement.ts,
 * confinement-checks.ts, the agents file's new fields): defaults, the tenants' uids, the
 * reachability check, the launch plan and what the hub refuses to start with.
 */
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { parseAgentsFile } from '../../server/agents/acp/agents-config.js';
import { DEFAULT_TENANT_UIDS, launchPlan, TenantUids, unreachableReason } from '../../server/agents/agent-confinement.js';
import { confinementProblems } from '../../server/agents/confinement-checks.js';
import { tempDir } from '../helpers/start-server.js';
import { capturingLogger } from './support.js';

const dir = tempDir('confinement-config-');
afterAll(() => dir.remove());

it('agents are confined by default; "none" is explicit and cannot be combined with a user', () => {
  const file = parseAgentsFile(JSON.stringify({ agents: { q: { kind: 'acp', command: 'q' }, n: { kind: 'acp', command: 'n', confinement: 'none' } } }), '/');
  expect(file.agents[0]!.config).toMatchObject({ confinement: 'tenant', shareUserAcrossTenants: false });
  expect(file.agents[1]!.config.confinement).toBe('none');
  expect(file.tenantUids).toEqual(DEFAULT_TENANT_UIDS);
  expect(() => parseAgentsFile(JSON.stringify({ agents: { n: { kind: 'acp', command: 'n', confinement: 'none', user: 0 } } }), '/')).toThrow(`agents.n: "confinement": "none" runs the agent as the hub's own user`);
  expect(() => parseAgentsFile(JSON.stringify({ agents: {}, tenantUids: { first: 2_147_483_000, count: 1_000 } }), '/')).toThrow(/tenantUids: the range must end at 2147483647 or below/);
});

it('each tenant gets a uid of its own, never one an account uses, and keeps it across restarts', () => {
  const file = join(dir.dir, 'agent-uids.json');
  const taken = new Set([5_000, 5_002]);
  const uids = new TenantUids(file, { first: 5_000, count: 4 }, (uid) => taken.has(uid));
  expect(uids.of('acme')).toEqual({ uid: 5_001, gid: 5_001 });
  expect(uids.of('evil')).toEqual({ uid: 5_003, gid: 5_003 });
  expect(uids.of('acme')).toEqual({ uid: 5_001, gid: 5_001 });
  expect(() => uids.of('third')).toThrow('no free uid left in the tenants’ range 5000–5003'.replace('’', "'"));
  expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ acme: 5_001, evil: 5_003 });
  const again = new TenantUids(file, { first: 5_000, count: 4 }, () => false);
  expect(again.of('evil')).toEqual({ uid: 5_003, gid: 5_003 });
});

it('reachability names the first directory a uid may not pass, by owner, group and other bits', () => {
  const outer = join(dir.dir, 'outer');
  const inner = join(outer, 'inner');
  mkdirSync(inner, { recursive: true });
  const script = join(inner, 'agent.mjs');
  writeFileSync(script, '');
  chmodSync(dir.dir, 0o711);
  chmodSync(outer, 0o750);
  chmodSync(inner, 0o755);
  chmodSync(script, 0o640);
  const stranger = { uid: 4_000_001, gid: 4_000_001 };
  expect(unreachableReason(script, stranger)).toBe(`no passage through ${outer} (mode 0750, owner uid 0)`);
  // The group's bits apply to the uid's gid (the agent has no supplementary groups).
  const member = { uid: 4_000_002, gid: statSync(outer).gid };
  expect(unreachableReason(script, member)).toBeUndefined();
  expect(unreachableReason(script, member, 'run')).toBe(`${script} is not readable and executable (mode 0640, owner uid 0)`);
  expect(unreachableReason(join(inner, 'missing'), member)).toBe(`${join(inner, 'missing')} does not exist`);
  chmodSync(outer, 0o751);
  expect(unreachableReason(inner, stranger, 'pass')).toBeUndefined();
  expect(unreachableReason(script, stranger)).toBe(`${script} is not readable (mode 0640, owner uid 0)`);
});

it('the launch plan wraps the agent in unshare, which drops to the uid, or sets the uid itself', () => {
  const identity = { uid: 1_900_000_000, gid: 1_900_000_000 };
  expect(launchPlan('qwen', ['--acp'], identity, '/usr/bin/unshare')).toEqual({
    command: '/usr/bin/unshare',
    args: ['--pid', '--fork', '--mount-proc', '--kill-child', '--setuid', '1900000000', '--setgid', '1900000000', '--', 'qwen', '--acp'],
  });
  expect(launchPlan('qwen', ['--acp'], identity, undefined)).toEqual({ command: 'qwen', args: ['--acp'], ...identity });
});

it('start-up: refused for a shared user on several tenants, for a non-root hub, or an unreachable agent; "none" only warns', () => {
  const uids = new TenantUids(undefined, { first: 4_100_000, count: 10 }, () => false);
  const logger = capturingLogger();
  const base = { tenants: ['acme', 'evil'], tenantUids: uids, dataDir: dir.dir, hubUid: 0, pathVariable: process.env['PATH'] ?? '' };
  const agent = (config: object): { provider: string; config: ReturnType<typeof parseAgentsFile>['agents'][number]['config'] } => ({
    provider: 'a',
    config: { kind: 'acp', command: process.execPath, args: [], env: {}, passEnv: [], startupTimeoutMs: 60_000, confinement: 'tenant', ...config },
  });
  expect(confinementProblems({ ...base, agents: [agent({ uid: 999, gid: 999 })] }, logger)).toEqual([
    'agents.a: "user" puts the agents of all 2 tenants under uid 999, where they can reach each other\'s sessions; drop "user" (each tenant then gets a uid of its own) or say "shareUserAcrossTenants": true',
  ]);
  expect(confinementProblems({ ...base, agents: [agent({ uid: 999, gid: 999, shareUserAcrossTenants: true })] }, logger)).toEqual([]);
  expect(confinementProblems({ ...base, tenants: ['acme'], agents: [agent({ uid: 999, gid: 999 })] }, logger)).toEqual([]);
  expect(confinementProblems({ ...base, hubUid: 1000, agents: [agent({})] }, logger)[0]).toContain('only a hub running as root can switch to it');
  expect(confinementProblems({ ...base, agents: [agent({ command: '/nonexistent/agent' })] }, logger)[0]).toContain('cannot reach its program: /nonexistent/agent does not exist');
  expect(confinementProblems({ ...base, hubUid: 1000, agents: [agent({ confinement: 'none' })] }, logger)).toEqual([]);
  expect(logger.lines.some((l) => l.level === 'warn' && l.msg.includes('runs unconfined ("confinement": "none")'))).toBe(true);
});
