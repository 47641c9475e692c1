/**
 * The hub's HTTP API from the browser (search, export): the same bearer token the WebSocket
 * signed in with, so the same role and tenant apply. A refusal comes back as the hub's
 * `{code, message}` body, thrown as an `ApiError` whose message is the hub's words.
 */
import type { AppContext } from './context.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export async function apiGet(ctx: AppContext, path: string): Promise<Response> {
  const headers: Record<string, string> = {};
  if (ctx.token) headers['authorization'] = `Bearer ${ctx.token}`;
  const res = await fetch(path, { headers });
  if (res.ok) return res;
  let body: { code?: unknown; message?: unknown } = {};
  try {
    body = (await res.json()) as typeof body;
  } catch {
    // not our JSON body: the status says enough
  }
  throw new ApiError(res.status, typeof body.code === 'string' ? body.code : `http_${res.status}`, typeof body.message === 'string' ? body.message : `the hub answered ${res.status}`);
}
