/** Shared pieces of the ACP tests: a hub with ACP providers, a log-capturing logger, turn helpers. */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Logger } from '../../server/log.js';
import { AcpAgentProvider } from '../../server/agents/acp/acp-provider.js';
import type { ResolvedAcpAgentConfig } from '../../server/agents/acp/agents-config.js';
import { demoAgent, remoteAgent } from '../../server/agents/demo-agent.js';
import type { AgentProcessBudget } from '../../server/agents/agent-budget.js';
import { tenantSegment } from '../../server/agents/agent-workspace.js';
import type { ChatState, ResponsePart, ToolCallState } from '../../shared/protocol/state.js';
import { isPartOfKind } from '../../shared/protocol/state.js';
import { startTestServer, type TestServer } from '../helpers/start-server.js';
import type { RpcClient } from '../helpers/rpc-client.js';
import { userMessage } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';

export const SCRIPTED_AGENT = resolve('test/acp/scripted-agent.mjs');

/**
 * The scripted agent and its ACP library bundled into one file in a fresh 0755 directory, for an
 * agent run as another user (the default confinement): the clone itself may sit where nobody else
 * can enter (a 0700 `mktemp -d`, a home directory). Call `remove` in afterAll.
 */
export function bundleScriptedAgent(): { path: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'ahp-agent-bin-'));
  chmodSync(dir, 0o755);
  const path = join(dir, 'scripted-agent.mjs');
  execFileSync(resolve('node_modules/.bin/esbuild'), [SCRIPTED_AGENT, '--bundle', '--platform=node', '--format=esm', '--log-level=warning', `--outfile=${path}`]);
  chmodSync(path, 0o644);
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A logger that keeps every line (to check where agent stderr goes). */
export function capturingLogger(): Logger & { lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> } {
  const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
  const make = (base: Record<string, unknown>): Logger => ({
    debug: (msg, fields) => lines.push({ level: 'debug', msg, fields: { ...base, ...fields } }),
    info: (msg, fields) => lines.push({ level: 'info', msg, fields: { ...base, ...fields } }),
    warn: (msg, fields) => lines.push({ level: 'warn', msg, fields: { ...base, ...fields } }),
    error: (msg, fields) => lines.push({ level: 'error', msg, fields: { ...base, ...fields } }),
    child: (fields) => make({ ...base, ...fields }),
  });
  return Object.assign(make({}), { lines });
}

/**
 * The scripted agent as the hub's own user (`"confinement": "none"`): these tests are about the
 * ACP mapping, not confinement (agent-confinement.test.ts runs it confined, as the default is).
 */
export function acpConfig(overrides: Partial<ResolvedAcpAgentConfig> = {}): ResolvedAcpAgentConfig {
  return { kind: 'acp', command: process.execPath, args: [SCRIPTED_AGENT], env: {}, passEnv: [], startupTimeoutMs: 60_000, confinement: 'none', ...overrides };
}

export async function startAcpHub(
  agents: Array<{ provider: string; config: ResolvedAcpAgentConfig }>,
  logger: Logger,
  options: { dataDir?: string; withAuth?: boolean; budget?: AgentProcessBudget; staticDir?: string } = {},
): Promise<{ server: TestServer; providers: Map<string, AcpAgentProvider>; providersOf: (tenant: string) => Map<string, AcpAgentProvider> | undefined }> {
  // Every tenant gets its own provider instances (they keep per-session state); the map returned
  // holds the first tenant's, which is the one the tests drive.
  const perTenant = new Map<string, Map<string, AcpAgentProvider>>();
  const providersOf = (tenant: string, stateDir: string | undefined): Map<string, AcpAgentProvider> => {
    let own = perTenant.get(tenant);
    if (!own) {
      const stateFile = (provider: string): string | undefined => (stateDir ? join(stateDir, `acp-sessions.${provider}.json`) : undefined);
      // As `npm start` lays them out: `<cwd>/<tenant>/…` when the agent names a cwd, else `<data>/agents/<tenant>/…`.
      const workspaceRoot = (cwd: string | undefined): string | undefined => (cwd !== undefined ? join(cwd, tenantSegment(tenant)) : options.dataDir ? join(options.dataDir, 'agents', tenantSegment(tenant)) : undefined);
      own = new Map(
        agents.map((a) => [
          a.provider,
          new AcpAgentProvider({ provider: a.provider, config: a.config, logger, newId: randomUUID, stateFile: stateFile(a.provider), tenant, budget: options.budget, workspaceRoot: workspaceRoot(a.config.cwd) }),
        ]),
      );
      perTenant.set(tenant, own);
    }
    return own;
  };
  const { budget: _budget, ...serverOptions } = options;
  const server = await startTestServer({ providers: (tenant, stateDir) => [demoAgent, remoteAgent, ...providersOf(tenant, stateDir).values()], ...serverOptions });
  const providers = perTenant.values().next().value!;
  return { server, providers, providersOf: (tenant) => perTenant.get(tenant) };
}

export async function createSessionWith(client: RpcClient, provider: string): Promise<{ session: string; chat: string }> {
  const session = `ahp-session:/${randomUUID()}`;
  const r = await client.request<{ defaultChat: string }>('createSession', { channel: session, provider });
  return { session, chat: r.defaultChat };
}

export async function startTurn(client: RpcClient, chat: string, text: string): Promise<string> {
  const turnId = `turn-${randomUUID()}`;
  const echo = await client.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId, startedAt: new Date().toISOString(), message: userMessage(text) });
  if (echo.rejectionReason) throw new Error(`turn start rejected: ${echo.rejectionReason}`);
  return turnId;
}

export function chatState(server: TestServer, chat: string): ChatState {
  return server.hub.chatEntry(chat)!.state;
}

/** The parts of a turn, whether it is still running or ended. */
export function turnParts(state: ChatState, turnId: string): ResponsePart[] {
  if (state.activeTurn?.id === turnId) return state.activeTurn.responseParts;
  return state.turns.find((t) => t.id === turnId)?.responseParts ?? [];
}

export function endedTurn(server: TestServer, chat: string, turnId: string): ChatState['turns'][number] | undefined {
  return chatState(server, chat).turns.find((t) => t.id === turnId);
}

export async function waitForEnd(server: TestServer, chat: string, turnId: string, timeoutMs = 30_000): Promise<ChatState['turns'][number]> {
  return waitFor(() => endedTurn(server, chat, turnId), { what: `turn ${turnId} to end`, timeoutMs });
}

export function toolOf(state: ChatState, turnId: string, toolCallId: string): ToolCallState | undefined {
  for (const p of turnParts(state, turnId)) if (isPartOfKind(p, 'toolCall') && p.toolCall.toolCallId === toolCallId) return p.toolCall;
  return undefined;
}

export async function waitForTool(server: TestServer, chat: string, turnId: string, toolCallId: string, status: string, timeoutMs = 30_000): Promise<ToolCallState> {
  return waitFor(
    () => {
      const tc = toolOf(chatState(server, chat), turnId, toolCallId);
      return tc?.status === status ? tc : undefined;
    },
    { what: `tool ${toolCallId} to be ${status}`, timeoutMs },
  );
}

/** All markdown text of a turn, parts joined with newlines. */
export function markdownOf(state: ChatState, turnId: string): string {
  return turnParts(state, turnId)
    .filter((p) => isPartOfKind(p, 'markdown'))
    .map((p) => (p as { content: string }).content)
    .join('\n');
}

/** The `REPORT {...}` values the scripted agent streamed in a turn. */
export function reports(state: ChatState, turnId: string): Array<Record<string, unknown>> {
  return [...markdownOf(state, turnId).matchAll(/^REPORT (.*)$/gm)].map((m) => JSON.parse(m[1]!) as Record<string, unknown>);
}

export function script(...steps: unknown[]): string {
  return JSON.stringify({ steps });
}

export function text(t: string): unknown {
  return { update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: t } } };
}
