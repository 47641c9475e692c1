/**
 * A small Server-Sent-Events client over global `fetch`: it reads the response body stream,
 * parses `id:` / `data:` / comment lines, records every event, and lets tests wait on them.
 */
import { waitFor } from './wait-for.js';
import { RpcClient } from './rpc-client.js';
import { startTestServer, type TestServer } from './start-server.js';

export interface SseEvent {
  /** The `id:` of this event, if it carried one. */
  id: string | undefined;
  /** `data:` parsed as JSON. */
  data: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  raw: string;
}

export class SseClient {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  status = 0;
  headers: Headers | undefined;
  /** Set when the server ended the stream. */
  ended = false;
  /** Body of a non-2xx or non-SSE response. */
  errorBody: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** The `id` of the last event received (what an EventSource would send as Last-Event-ID). */
  lastEventId: string | undefined;
  readonly #abort = new AbortController();
  #done: Promise<void> = Promise.resolve();

  static async open(url: string, init: { token?: string; lastEventId?: string; method?: string; body?: unknown } = {}): Promise<SseClient> {
    const client = new SseClient();
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (init.token) headers['authorization'] = `Bearer ${init.token}`;
    if (init.lastEventId) headers['last-event-id'] = init.lastEventId;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(url, {
      method: init.method ?? 'GET',
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: client.#abort.signal,
    });
    client.status = res.status;
    client.headers = res.headers;
    if (!res.ok || !(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      const text = await res.text();
      try {
        client.errorBody = JSON.parse(text);
      } catch {
        client.errorBody = text;
      }
      client.ended = true;
      return client;
    }
    client.#done = client.#read(res.body!);
    return client;
  }

  async #read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let sep: number;
        while ((sep = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, sep);
          buffer = buffer.slice(sep + 2);
          this.#parse(block);
        }
      }
    } catch {
      // aborted by close()
    }
    this.ended = true;
  }

  #parse(block: string): void {
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
      else if (line.startsWith('id:')) id = line.slice(3).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (id !== undefined) this.lastEventId = id;
    if (data.length === 0) return;
    const raw = data.join('\n');
    this.events.push({ id, data: JSON.parse(raw), raw });
  }

  /** `_qwen/notify` frames of one kind. */
  notifies(kind: string): SseEvent[] {
    return this.events.filter((e) => e.data?.method === '_qwen/notify' && e.data.params?.kind === kind);
  }

  updates(sessionUpdate?: string): SseEvent[] {
    return this.events.filter((e) => e.data?.method === 'session/update' && (sessionUpdate === undefined || e.data.params?.update?.sessionUpdate === sessionUpdate));
  }

  /** Waits for the n-th (1-based) event matching `predicate`. */
  waitForEvent(predicate: (e: SseEvent) => boolean, what = 'SSE event', count = 1): Promise<SseEvent> {
    return waitFor(() => this.events.filter(predicate)[count - 1], { what });
  }

  /** Waits for a `permission_request`; returns its `params.data`. */
  async waitForPermissionRequest(count = 1, predicate: (data: any) => boolean = () => true): Promise<any> {
    // eslint-disable-line @typescript-eslint/no-explicit-any
    const e = await this.waitForEvent((ev) => ev.data?.method === '_qwen/notify' && ev.data.params?.kind === 'permission_request' && predicate(ev.data.params.data), 'permission_request', count);
    return e.data.params.data;
  }

  waitForResolved(requestId: string): Promise<SseEvent> {
    return this.waitForEvent((ev) => ev.data?.method === '_qwen/notify' && ev.data.params?.kind === 'permission_resolved' && ev.data.params.data.requestId === requestId, `permission_resolved ${requestId}`);
  }

  async waitForEnd(): Promise<void> {
    await waitFor(() => this.ended || undefined, { what: 'end of SSE stream' });
  }

  async close(): Promise<void> {
    this.#abort.abort();
    await this.#done;
  }
}

// ─── Reply helpers (DataWorks and Qwen shapes) ───────────────────────────────

export interface HttpResult {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export async function postJson(url: string, body: unknown, token?: string): Promise<HttpResult> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers['authorization'] = `Bearer ${token}`;
  const res = await fetch(url, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // keep text
  }
  return { status: res.status, body: parsed };
}

/** DataWorks `ReplyAgentSession`: `POST /v2/agent-sessions/reply`. */
export function replyDataWorks(
  baseUrl: string,
  params: { SessionId?: unknown; PermissionRequestId?: unknown; Outcome?: unknown; Answers?: unknown },
  options: { id?: unknown; token?: string; envelope?: Record<string, unknown> } = {},
): Promise<HttpResult> {
  const body = options.envelope ?? { Jsonrpc: '2.0', Id: options.id ?? `reply-${Math.random().toString(36).slice(2)}`, Params: params };
  return postJson(`${baseUrl}/v2/agent-sessions/reply`, body, options.token);
}

/** Qwen: `POST /session/{sessionId}/permission/{requestId}`. */
export function replyQwen(baseUrl: string, sessionId: string, requestId: string, body: unknown, token?: string): Promise<HttpResult> {
  return postJson(`${baseUrl}/session/${encodeURIComponent(sessionId)}/permission/${encodeURIComponent(requestId)}`, body, token);
}

export function sessionIdOfUri(uri: string): string {
  return uri.replace(/^ahp-session:\//, '');
}

// ─── A session watched from an AHP tab and an SSE listener ───────────────────

export interface WatchedSession {
  readonly tab: RpcClient;
  readonly session: string;
  readonly sessionId: string;
  readonly chat: string;
  readonly sse: SseClient;
}

/**
 * Creates a session from an AHP tab subscribed to its default chat and opens the session's SSE
 * stream; registers their teardown in `closers`.
 */
export async function openWatchedSession(server: { wsUrl: string; url: string }, title: string, closers: Array<() => Promise<void>>): Promise<WatchedSession> {
  const tab = await RpcClient.open(server.wsUrl);
  closers.push(() => tab.close());
  const { session, chat } = await tab.createSession(title);
  await tab.subscribe(chat);
  const sessionId = sessionIdOfUri(session);
  const sse = await SseClient.open(`${server.url}/v2/sessions/${sessionId}/events`);
  closers.push(() => sse.close());
  return { tab, session, sessionId, chat, sse };
}

/**
 * Stops `previous` (its SSE listener, tab and hub), starts a new hub on the same data directory, and
 * watches the same session and chat again: what a restart looks like to the clients.
 */
export async function restartWatchedSession(
  previous: { server: TestServer; tab: RpcClient; sse: SseClient; session: string; sessionId: string; chat: string },
  closers: Array<() => Promise<void>>,
): Promise<{ server: TestServer; tab: RpcClient; sse: SseClient }> {
  await previous.sse.close();
  await previous.tab.close();
  await previous.server.close();
  const server = await startTestServer({ dataDir: previous.server.dataDir });
  closers.push(() => server.stop());
  const tab = await RpcClient.open(server.wsUrl);
  closers.push(() => tab.close());
  await tab.subscribe(previous.chat);
  const sse = await SseClient.open(`${server.url}/v2/sessions/${previous.sessionId}/events`);
  closers.push(() => sse.close());
  return { server, tab, sse };
}
