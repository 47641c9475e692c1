/**
 * Turning what a failing ACP agent tells the hub into a turn error a person can act on. Agents
 * answer a failed request with a bare JSON-RPC error ("Internal error") and put the cause in its
 * `data` (Qwen Code: `{details: "Connection error."}` after its model could not be reached);
 * the turn's error quotes that cause, and names the model endpoint the agent was configured with
 * when the cause is a connection it could not make (docs/agents.md, "When an agent fails").
 */
import { TurnFailure } from '../agent.js';

/** Longest agent-supplied text quoted in a turn's error. */
const MAX_DETAIL_CHARS = 1_000;

/**
 * Environment variables the agents this hub documents read their model's address from
 * (docs/agents.md recipes), in the order they are looked at.
 */
const MODEL_ENDPOINT_VARIABLES = ['OPENAI_BASE_URL', 'ANTHROPIC_BASE_URL', 'GOOGLE_GEMINI_BASE_URL', 'GEMINI_BASE_URL'] as const;

/** Causes that mean the agent could not open or keep a connection to its model. */
const UNREACHABLE = /connection error|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|fetch failed|socket hang up|network error|could not connect|failed to connect/i;

/** A JSON-RPC error answer from the agent (the SDK's `RequestError`, or anything shaped like one). */
export function isAgentErrorAnswer(err: unknown): err is { code: number; message: string; data?: unknown } {
  return typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'number' && typeof (err as { message?: unknown }).message === 'string';
}

function cut(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_DETAIL_CHARS ? `${flat.slice(0, MAX_DETAIL_CHARS)}…` : flat;
}

/** The cause an agent put in a JSON-RPC error's `data` (a string, or `details` / `message` / `error`). */
export function agentErrorDetail(data: unknown): string | undefined {
  if (typeof data === 'string') return data.trim() ? cut(data) : undefined;
  if (typeof data !== 'object' || data === null) return undefined;
  for (const key of ['details', 'message', 'error', 'cause'] as const) {
    const value = (data as Record<string, unknown>)[key];
    const text = typeof value === 'string' ? value : typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string' ? (value as { message: string }).message : undefined;
    if (text?.trim()) return cut(text);
  }
  return undefined;
}

/**
 * The model endpoint named in the agent's environment, as origin and path only: a user name,
 * password or query (which may hold a key) never reaches a turn's error.
 */
export function modelEndpointOf(env: Readonly<Record<string, string | undefined>>): string | undefined {
  for (const name of MODEL_ENDPOINT_VARIABLES) {
    const raw = env[name];
    if (!raw) continue;
    try {
      const url = new URL(raw);
      return `${url.origin}${url.pathname === '/' ? '' : url.pathname}`;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * The turn failure for an agent's JSON-RPC error answer to `what`: its own cause when it gave
 * one (`modelUnreachable` with the endpoint when the cause is a connection), else its message.
 */
export function failureFromAgentError(what: string, err: { code: number; message: string; data?: unknown }, modelEndpoint: string | undefined, starting = false): TurnFailure {
  const detail = agentErrorDetail(err.data);
  const message = cut(err.message);
  if (detail && UNREACHABLE.test(detail)) {
    const where = modelEndpoint ? ` at ${modelEndpoint}` : '';
    return new TurnFailure(`The agent could not reach its model${where}: ${detail} (${what} failed: ${message}, JSON-RPC ${err.code}).`, 'modelUnreachable');
  }
  const cause = detail && detail !== message ? `${detail} (${message}, JSON-RPC ${err.code})` : `${message} (JSON-RPC ${err.code})`;
  // Refused while opening its session (`initialize`, `session/new`): the turn never started.
  if (starting) return new TurnFailure(`The agent could not be started: it refused ${what}: ${cause}.`, 'agentStartFailed');
  return new TurnFailure(`The agent failed on ${what}: ${cause}.`, 'agentError');
}
