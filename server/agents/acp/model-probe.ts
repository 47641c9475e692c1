/**
 * Telling early that an agent's model endpoint does not answer. An agent that cannot reach its
 * model retries on its own before it fails the prompt (Qwen Code: about 95 s), and the turn only
 * says "Working…" meanwhile. When a turn starts, the hub opens one TCP connection to the endpoint
 * the agent's environment names (agent-errors.ts `modelEndpointOf`) and closes it at once; if that
 * is refused, unresolvable or silent for `PROBE_TIMEOUT_MS`, the turn shows a notice within
 * seconds while the agent keeps trying. The probe only warns: the agent decides the turn.
 * Skipped when the agent would go through a proxy (its own route may work where ours does not).
 */
import { connect } from 'node:net';

export const PROBE_TIMEOUT_MS = 3_000;

/** host:port of an http(s) endpoint, or undefined for anything else. */
function addressOf(endpoint: string): { host: string; port: number } | undefined {
  try {
    const url = new URL(endpoint);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port };
  } catch {
    return undefined;
  }
}

/** True when the agent's environment sends requests to `host` through a proxy. */
function proxied(host: string, protocol: string, env: Readonly<Record<string, string | undefined>>): boolean {
  const proxy = protocol === 'https:' ? (env['HTTPS_PROXY'] ?? env['https_proxy']) : (env['HTTP_PROXY'] ?? env['http_proxy']);
  if (!proxy) return false;
  const bypass = (env['NO_PROXY'] ?? env['no_proxy'] ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  const name = host.toLowerCase();
  return !bypass.some((b) => b === '*' || name === b.replace(/^\./, '') || name.endsWith(b.startsWith('.') ? b : `.${b}`));
}

export type ProbeResult =
  | { readonly kind: 'reachable' }
  /** Not probed: not an http(s) URL, or the agent goes through a proxy. */
  | { readonly kind: 'skipped'; readonly why: string }
  /** Why it looks unreachable from here, e.g. "connection refused". */
  | { readonly kind: 'unreachable'; readonly problem: string }
  | { readonly kind: 'aborted' };

/** One TCP connection to `endpoint`, closed at once; the turn's `signal` abandons it. */
export function probeModelEndpoint(endpoint: string, env: Readonly<Record<string, string | undefined>>, signal: AbortSignal, timeoutMs = PROBE_TIMEOUT_MS): Promise<ProbeResult> {
  const address = addressOf(endpoint);
  if (!address) return Promise.resolve({ kind: 'skipped', why: 'not an http(s) endpoint' });
  if (proxied(address.host, new URL(endpoint).protocol, env)) return Promise.resolve({ kind: 'skipped', why: 'the agent uses a proxy for it' });
  return new Promise((resolve) => {
    const socket = connect({ host: address.host, port: address.port });
    const done = (result: ProbeResult): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(signal.aborted ? { kind: 'aborted' } : result);
    };
    const onAbort = (): void => done({ kind: 'aborted' });
    const timer = setTimeout(() => done({ kind: 'unreachable', problem: `no answer within ${timeoutMs / 1000} s` }), timeoutMs);
    timer.unref();
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => done({ kind: 'reachable' }));
    socket.once('error', (err: NodeJS.ErrnoException) => done({ kind: 'unreachable', problem: describeConnectError(err) }));
  });
}

function describeConnectError(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host name not found';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    default:
      return err.code ?? err.message;
  }
}

/** The notice a turn shows when the probe failed. */
export function unreachableNotice(endpoint: string, problem: string): string {
  return `The hub cannot connect to this agent's model at ${endpoint} (${problem}). The agent may keep retrying for a while; the turn ends with its error if the model stays unreachable.`;
}
