/**
 * Dev mode (no `--auth`) makes every caller the dev admin, so the hub must only be reachable by
 * programs on this machine. Listening on loopback is not enough against a browser: any web page can
 * open a WebSocket to 127.0.0.1 (it carries the page's `Origin`), and DNS rebinding lets a page on
 * `evil.example` reach the hub under its own name (the `Host` header then names `evil.example`).
 * So in dev mode every HTTP request and WebSocket upgrade must name a loopback host, and a browser
 * request must come from a loopback page. Programs that send no `Origin` (the CLI, the SDK on Node,
 * curl) are not browsers and pass.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import { ProtocolError } from '../../shared/protocol/errors.js';

/** A request or upgrade refused before routing: a `ProtocolError` of the one table. */
export type GuardRefusal = ProtocolError;

function isLoopbackName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name === '::1' || name === '[::1]') return true;
  return isIP(name) === 4 && name.startsWith('127.');
}

/** `localhost:8787`, `127.0.0.1`, `[::1]:8787` → the host name without the port; undefined if malformed. */
function hostOf(header: string): string | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+)(?::(\d{1,5}))?$/.exec(header.trim());
  return m ? m[1] : undefined;
}

/** Why a dev-mode request must be refused, or undefined when it comes from this machine. */
export function loopbackRefusal(headers: IncomingHttpHeaders): GuardRefusal | undefined {
  const host = headers.host === undefined ? undefined : hostOf(headers.host);
  if (host === undefined || !isLoopbackName(host)) {
    return new ProtocolError('host_not_allowed', 'dev mode (no --auth) only answers requests addressed to localhost, 127.0.0.1 or [::1]');
  }
  const origin = headers.origin;
  if (origin !== undefined) {
    let allowed = false;
    try {
      const url = new URL(origin);
      allowed = (url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackName(url.hostname);
    } catch {
      allowed = false;
    }
    if (!allowed) {
      return new ProtocolError('origin_not_allowed', 'dev mode (no --auth) only accepts browser requests from pages served on localhost, 127.0.0.1 or [::1]');
    }
  }
  return undefined;
}
