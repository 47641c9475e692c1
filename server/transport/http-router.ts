/**
 * A small HTTP router for the hub's REST surfaces (steering inputs, permission replies, SSE).
 * Path patterns use `{name}` segments; each segment is URL-decoded on its own, so ids may carry
 * reserved characters (`%2F` stays inside one segment). Every error is a `ProtocolError` whose
 * status and body (`{...data, code, message}`) are rendered by `./http-reply.ts` from the one table.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Authenticator, Principal } from '../auth/auth.js';
import { tokenFromRequest } from '../auth/auth.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import { ProtocolError } from '../../shared/protocol/errors.js';
import { sendError, sendJsonAs } from './http-reply.js';
import { UNCOUNTED_SLOT, type StreamSlot } from './stream-slots.js';

/** Takes stream slots for one request's caller (the server binds it to the request's token). */
export interface StreamClaimer {
  claim(principal: Principal, res: ServerResponse): StreamSlot;
}

export interface HttpContext {
  readonly params: Readonly<Record<string, string>>;
  readonly url: URL;
  readonly principal: Principal;
  /**
   * Takes one of the caller's stream slots for a long-lived response (SSE), or throws the 429
   * `too_many_streams` refusal (see `stream-slots.ts`). Release it when the stream ends.
   */
  claimStream(): StreamSlot;
}

export type HttpHandler = (req: IncomingMessage, res: ServerResponse, ctx: HttpContext) => unknown;

export { ProtocolError };
export { httpBodyOf, redirect, sendAccepted, sendCreated, sendError, sendJson, sendJsonAs, sendNoContent, startOk } from './http-reply.js';

/** Reads and parses a JSON body of at most `limit` bytes; `body_too_large`, `invalid_json`, `unsupported_media_type` otherwise. */
export async function readJsonBody(req: IncomingMessage, limit = 256 * 1024): Promise<unknown> {
  const type = req.headers['content-type'] ?? '';
  if (type && !/^application\/(.+\+)?json\b/i.test(type)) {
    throw new ProtocolError('unsupported_media_type', 'send the body as application/json');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limit) throw new ProtocolError('body_too_large', `the body is larger than ${limit} bytes`);
    chunks.push(buf);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw new ProtocolError('invalid_json', 'the body is empty; send a JSON object');
  try {
    return JSON.parse(text);
  } catch {
    throw new ProtocolError('invalid_json', 'the body is not valid JSON');
  }
}

interface Route {
  readonly method: string;
  readonly segments: readonly string[];
  readonly handler: HttpHandler;
  readonly public: boolean;
}

/** The side of the router a feature sees: it adds routes, it does not route. */
export type HttpRegistrar = Pick<HttpRouter, 'add' | 'reserveApiPrefix'>;

export class HttpRouter {
  readonly #routes: Route[] = [];
  /** Path prefixes that belong to the API: unmatched paths under them answer a JSON 404. */
  readonly #apiPrefixes: string[] = [];

  constructor(
    private readonly auth: Authenticator,
    private readonly logger: Logger,
  ) {}

  /** Registers a route; `{name}` segments become params. Routes need a token unless `public`. */
  add(method: string, pattern: string, handler: HttpHandler, options: { public?: boolean } = {}): void {
    this.#routes.push({ method, segments: pattern.split('/').slice(1), handler, public: options.public ?? false });
  }

  /**
   * Declares `/name` (and everything under it) an API path: a request no route matches gets a
   * JSON 404 here instead of falling through to the browser app's pages.
   */
  reserveApiPrefix(prefix: string): void {
    this.#apiPrefixes.push(prefix.replace(/\/+$/, ''));
  }

  /**
   * In dev mode every caller is the admin, so a POST must prove it is not a browser's "simple"
   * cross-site request: those can only carry text/plain, form types or no Content-Type at all,
   * while application/json needs a CORS preflight this hub never grants. PUT, PATCH and DELETE are
   * never simple requests (always preflighted), so a body-less DELETE (qwen's `closeSession`) needs
   * no Content-Type.
   */
  #contentTypeRefusal(req: IncomingMessage): ProtocolError | undefined {
    if (this.auth.enforced || req.method !== 'POST') return undefined;
    if (JSON_TYPE.test(req.headers['content-type'] ?? '')) return undefined;
    return new ProtocolError('unsupported_media_type', `${req.method} needs Content-Type: application/json`);
  }

  /**
   * Handles the request if a route matches (or the path is a reserved API path); false otherwise.
   * `caller`: who the request's token names, when the server already authenticated it (to pick
   * the tenant's router), so the token is not hashed and looked up a second time; `refusal`: why
   * its credential was refused, when the server knows (an expired JWT), answered instead of the plain 401.
   */
  async handle(req: IncomingMessage, res: ServerResponse, caller?: { readonly principal: Principal | undefined; readonly refusal?: ProtocolError | undefined; readonly streams?: StreamClaimer | undefined }): Promise<boolean> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const rawSegments = url.pathname.split('/').slice(1);
    let pathMatched = false;
    for (const route of this.#routes) {
      const params = match(route.segments, rawSegments);
      if (!params) continue;
      pathMatched = true;
      if (route.method !== req.method) continue;
      const refusal = this.#contentTypeRefusal(req);
      if (refusal) {
        sendError(res, refusal);
        return true;
      }
      let principal: Principal | undefined;
      if (!route.public) {
        principal = caller ? caller.principal : this.auth.authenticate(tokenFromRequest(req.headers, url));
        if (!principal) {
          // `error` is the field qwen serve's 401 has (and qwen's DaemonClient shows).
          sendError(res, caller?.refusal ?? new ProtocolError('unauthorized', 'a valid token is required (Authorization: Bearer <token> or ?token=)', { error: 'Unauthorized' }));
          return true;
        }
      }
      try {
        const who = principal ?? { user: 'anonymous', tenant: '', role: 'viewer' as const };
        const streams = caller?.streams;
        await route.handler(req, res, { params, url, principal: who, claimStream: () => (streams ? streams.claim(who, res) : UNCOUNTED_SLOT) });
      } catch (err) {
        if (res.headersSent) {
          res.destroy();
        } else if (err instanceof ProtocolError) {
          // Every refusal, the route's own or the hub's (storage away, over the disk quota, shutting
          // down), is answered by its kind's status and body.
          if (err.family === 'internal_error') this.logger.warn('http handler refused', { path: url.pathname, kind: err.kind, message: err.message });
          sendError(res, err);
        } else {
          this.logger.error('http handler failed', { path: url.pathname, ...errorFields(err) });
          sendError(res, new ProtocolError('internal_error', 'internal error'));
        }
      }
      return true;
    }
    if (pathMatched) {
      sendError(res, new ProtocolError('method_not_allowed', `${req.method} is not allowed on ${url.pathname}`));
      return true;
    }
    if (this.#apiPrefixes.some((p) => url.pathname === p || url.pathname.startsWith(p + '/'))) {
      sendNoRoute(res, req.method, url.pathname);
      return true;
    }
    return false;
  }
}

/** The JSON 404 for a path no route (and no app page) serves. */
export function sendNoRoute(res: ServerResponse, method: string | undefined, pathname: string): void {
  // Written out rather than a ProtocolError: clients have always seen `error` between `code` and `message`.
  sendJsonAs(res, 'not_found', { code: 'not_found', error: `no route for ${method} ${pathname}`, message: `no route for ${method} ${pathname}` });
}

const JSON_TYPE = /^application\/(.+\+)?json\s*(;|$)/i;

function match(pattern: readonly string[], raw: readonly string[]): Record<string, string> | undefined {
  if (pattern.length !== raw.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    let segment: string;
    try {
      segment = decodeURIComponent(raw[i]!);
    } catch {
      return undefined;
    }
    if (p.startsWith('{') && p.endsWith('}')) {
      if (segment === '') return undefined;
      params[p.slice(1, -1)] = segment;
    } else if (p !== segment) {
      return undefined;
    }
  }
  return params;
}
