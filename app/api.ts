/**
 * The hub's HTTP API from the browser (search, export, push subscriptions): the same bearer token
 * the WebSocket signed in with, so the same role and tenant apply. A refusal comes back as the
 * hub's `{code, message}` body, thrown as an `ApiError` whose message is the hub's words.
 */

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

/** Whatever carries the bearer token (the app context, or just `{ token }`). */
export interface ApiAuth {
  readonly token: string | undefined;
}

export function apiGet(auth: ApiAuth, path: string): Promise<Response> {
  return apiRequest(auth, 'GET', path);
}

/** A request with an optional JSON body (sent as `application/json`, which every POST needs). */
export async function apiRequest(auth: ApiAuth, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = {};
  if (auth.token) headers['authorization'] = `Bearer ${auth.token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, ...(body !== undefined && { body: JSON.stringify(body) }) });
  if (res.ok) return res;
  let err: { code?: unknown; message?: unknown } = {};
  try {
    err = (await res.json()) as typeof err;
  } catch {
    // not our JSON body: the status says enough
  }
  throw new ApiError(res.status, typeof err.code === 'string' ? err.code : `http_${res.status}`, typeof err.message === 'string' ? err.message : `the hub answered ${res.status}`);
}
