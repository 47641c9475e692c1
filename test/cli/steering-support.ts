/** Shared helpers for the steering tests (real hub, real HTTP + WebSocket). */
import { expect } from 'vitest';
import type { RpcClient } from '../helpers/rpc-client.js';
import { waitFor } from '../helpers/wait-for.js';

export interface Target {
  historyEpoch: string;
  turnId: string;
}

export interface HttpResult<T = Record<string, unknown>> {
  status: number;
  body: T;
}

export class SteeringHttp {
  constructor(
    readonly baseUrl: string,
    readonly token?: string,
  ) {}

  #headers(extra: Record<string, string> = {}): Record<string, string> {
    return { ...(this.token ? { authorization: `Bearer ${this.token}` } : {}), ...extra };
  }

  static idOf(session: string): string {
    return session.slice('ahp-session:/'.length);
  }

  async capabilities(session: string): Promise<HttpResult> {
    const r = await fetch(`${this.baseUrl}/v2/sessions/${encodeURIComponent(SteeringHttp.idOf(session))}/input-capabilities`, { headers: this.#headers() });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  }

  async target(session: string): Promise<Target | null> {
    const caps = await this.capabilities(session);
    expect(caps.status).toBe(200);
    return caps.body['target'] as Target | null;
  }

  async submitRaw(session: string, body: string, contentType = 'application/json'): Promise<HttpResult> {
    const r = await fetch(`${this.baseUrl}/v2/sessions/${encodeURIComponent(SteeringHttp.idOf(session))}/inputs`, {
      method: 'POST',
      headers: this.#headers({ 'content-type': contentType }),
      body,
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  }

  submit(session: string, body: unknown): Promise<HttpResult> {
    return this.submitRaw(session, JSON.stringify(body));
  }

  async status(session: string, inputId: string, target: Partial<Target>): Promise<HttpResult> {
    const q = new URLSearchParams();
    if (target.historyEpoch !== undefined) q.set('historyEpoch', target.historyEpoch);
    if (target.turnId !== undefined) q.set('turnId', target.turnId);
    const r = await fetch(`${this.baseUrl}/v2/sessions/${encodeURIComponent(SteeringHttp.idOf(session))}/inputs/${encodeURIComponent(inputId)}?${q}`, { headers: this.#headers() });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  }
}

type Part = {
  kind: string;
  id?: string;
  content?: string;
  message?: { text: string; origin: { kind: string }; _meta?: Record<string, unknown> };
  toolCall?: { toolCallId: string; status: string };
  request?: { id: string };
  response?: string;
};
export interface ChatView {
  activeTurn?: { id: string; responseParts: Part[] };
  turns: Array<{ id: string; state: string; responseParts: Part[]; message: { text: string } }>;
  steeringMessages?: Array<{ id: string; message: { text: string; origin: { kind: string }; _meta?: Record<string, unknown> } }>;
}

export async function chatState(client: RpcClient, chat: string): Promise<ChatView> {
  const snap = await client.request<{ snapshot: { state: ChatView } }>('subscribe', { channel: chat });
  return snap.snapshot.state;
}

/** Waits until the demo agent is blocked on the input request `requestId`. */
export function waitForOpenRequest(client: RpcClient, chat: string, requestId: string): Promise<true> {
  return waitFor(
    async () => {
      const s = await chatState(client, chat);
      return s.activeTurn?.responseParts.some((p) => p.kind === 'inputRequest' && p.request?.id === requestId && !p.response) ? true : undefined;
    },
    { what: `open input request ${requestId}` },
  );
}

export function waitForTurnEnd(client: RpcClient, chat: string, turnId: string): Promise<ChatView['turns'][number]> {
  return waitFor(async () => (await chatState(client, chat)).turns.find((t) => t.id === turnId), { what: `end of ${turnId}` });
}

/** A blocking `ask` step: the agent waits on it, between two barriers. */
export function askStep(id: string): Record<string, unknown> {
  return { ask: { id, message: 'continue?', questions: [{ id: 'q', kind: 'text', message: 'anything', required: false }] } };
}

export async function answer(client: RpcClient, chat: string, requestId: string): Promise<void> {
  const echo = await client.dispatchAndWait(chat, { type: 'chat/inputCompleted', requestId, response: 'accept', answers: {} });
  expect(echo.rejectionReason).toBeUndefined();
}
