/**
 * An HTTP actor: a DataWorks / qwen client of the hub's HTTP and SSE routes, through its own
 * fault proxy. It follows a session's event stream (`GET /v2/sessions/{id}/events`, resuming with
 * `Last-Event-ID` after a cut, skipping event ids it has), folds what the stream says about each
 * turn (its agent text, its tools' last status) into a replica, and answers permission requests
 * with qwen's reply route, retrying 5xx (after `Retry-After` when given, else with backoff) and
 * answers it never heard. A reply whose fate is unclear (no answer, then "not found") is looked
 * up on the stream: `permission_resolved` names the option that won.
 */
import { request } from 'node:http';
import type { Flaws } from './actor.js';
import type { CaseContext, CaseResult } from './case-types.js';
import type { Invariant, Step } from './case-format.js';

interface SseEvent {
  readonly id: string | undefined;
  readonly data: { method?: string; params?: { kind?: string; data?: Record<string, unknown>; update?: Record<string, unknown> } };
}

type Belief = 'accepted' | 'accepted-by-lookup' | 'refused' | 'unknown';

interface Reply {
  readonly op: string;
  readonly requestId: string;
  readonly optionId: string;
  belief: Belief;
  attempts: number;
  /** Statuses seen, in order (0: the connection was cut before a status). */
  readonly statuses: number[];
}

interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export class HttpActor {
  readonly events: SseEvent[] = [];
  readonly replies: Reply[] = [];
  #sessionId = '';
  #stream: { close(): void; ended: boolean } | undefined;
  #seen = new Set<string>();
  #lastEventId: string | undefined;
  #run: CaseContext | undefined;

  constructor(
    readonly name: string,
    readonly flaws: Flaws,
  ) {}

  async step(step: Step, run: CaseContext): Promise<void> {
    this.#run = run;
    if (step.do === 'sseOpen' || step.do === 'sseResume') {
      if (step.do === 'sseOpen') this.#sessionId = run.channel(`${step.session}.session`).slice('ahp-session:/'.length);
      await this.#open(step.do === 'sseResume' && !this.flaws.resumeWithoutLastEventId ? this.#lastEventId : undefined);
      return;
    }
    if (step.do === 'sseAwait') {
      const want = step.count ?? 1;
      // Soft: an event that never comes is reported by the invariants (the stream replica lacks it).
      await waitUntil(`${want} ${step.type} event(s) on ${this.name}'s stream`, () => this.#kinds(step.type).length >= want || (this.#stream?.ended ?? true), run.softWaitMs).catch(() => undefined);
      return;
    }
    if (step.do === 'httpReply') return this.#reply(step.op, step.optionId);
  }

  #kinds(kind: string): SseEvent[] {
    return this.events.filter((e) => e.data.params?.kind === kind);
  }

  async #open(lastEventId: string | undefined): Promise<void> {
    const proxy = await this.#run!.proxyOf(this.name);
    const token = this.#run!.tokenOf(this.name);
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (token) headers['authorization'] = `Bearer ${token}`;
    if (lastEventId) headers['last-event-id'] = lastEventId;
    const state: { ended: boolean; close(): void } = { ended: false, close: () => undefined };
    await new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: proxy.port, path: `/v2/sessions/${encodeURIComponent(this.#sessionId)}/events`, headers, agent: false }, (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`the event stream answered ${res.statusCode}`));
          res.resume();
          return;
        }
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let sep: number;
          while ((sep = buffer.indexOf('\n\n')) >= 0) {
            this.#parse(buffer.slice(0, sep));
            buffer = buffer.slice(sep + 2);
          }
        });
        const end = (): void => {
          state.ended = true;
        };
        res.on('end', end);
        res.on('error', end);
        res.on('close', end);
        resolve();
      });
      req.on('error', (err) => {
        state.ended = true;
        reject(err);
      });
      state.close = () => req.destroy();
      req.end();
    });
    this.#stream = state;
  }

  #parse(block: string): void {
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('id:')) id = line.slice(3).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
    }
    if (data.length === 0) return;
    if (id !== undefined) {
      this.#lastEventId = id;
      // An event the stream sent again after a resume is the same event: fold it once.
      if (this.#seen.has(id)) return;
      this.#seen.add(id);
    }
    try {
      this.events.push({ id, data: JSON.parse(data.join('\n')) as SseEvent['data'] });
    } catch {
      this.events.push({ id, data: {} });
    }
  }

  async #reply(op: string, optionId: string): Promise<void> {
    const request = this.#kinds('permission_request').at(-1)?.data.params?.data?.['requestId'];
    if (typeof request !== 'string') throw new Error(`${this.name} has seen no permission_request to reply to`);
    const reply: Reply = { op, requestId: request, optionId, belief: 'unknown', attempts: 0, statuses: [] };
    this.replies.push(reply);
    const path = `/session/${encodeURIComponent(this.#sessionId)}/permission/${encodeURIComponent(request)}`;
    const body = JSON.stringify({ outcome: { outcome: 'selected', optionId } });
    for (let backoffMs = 50; reply.attempts < 6; backoffMs *= 2) {
      reply.attempts++;
      const answer = await this.#post(path, body).catch(() => undefined);
      reply.statuses.push(answer?.status ?? 0);
      if (answer && answer.status >= 200 && answer.status < 300) {
        reply.belief = 'accepted';
        return;
      }
      if (answer && answer.status >= 500) {
        if (this.flaws.giveUpOn5xx) return;
        const hint = Number(headerOf(answer.headers, 'retry-after'));
        await delay(Number.isFinite(hint) && hint >= 0 ? hint * 1_000 : backoffMs);
        continue;
      }
      if (answer && answer.status === 404) {
        // After an attempt that got no answer, "not found" may mean "your first attempt won".
        if (!reply.statuses.includes(0) || this.flaws.trustNotFound) {
          reply.belief = 'refused';
          return;
        }
        const resolved = await waitUntil(`permission_resolved ${request}`, () => this.#kinds('permission_resolved').find((e) => e.data.params?.data?.['requestId'] === request), 10_000).catch(() => undefined);
        const won = (resolved?.data.params?.data?.['outcome'] as { optionId?: string } | undefined)?.optionId;
        reply.belief = resolved === undefined ? 'unknown' : won === optionId ? 'accepted-by-lookup' : 'refused';
        if (this.#run && reply.belief === 'accepted-by-lookup') this.#run.outcome = 'resolved-by-lookup';
        return;
      }
      if (answer) {
        reply.belief = 'refused';
        return;
      }
      await delay(backoffMs);
    }
  }

  #post(path: string, body: string): Promise<HttpAnswer> {
    return this.#run!.proxyOf(this.name).then(
      (proxy) =>
        new Promise<HttpAnswer>((resolve, reject) => {
          const token = this.#run!.tokenOf(this.name);
          const headers: Record<string, string> = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
          if (token) headers['authorization'] = `Bearer ${token}`;
          const req = request({ host: '127.0.0.1', port: proxy.port, method: 'POST', path, headers, agent: false }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (text += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
            res.on('error', reject);
          });
          req.on('error', reject);
          req.end(body);
        }),
    );
  }

  unknownOutcomes(): string[] {
    return this.replies.filter((r) => r.belief === 'unknown').map((r) => `reply ${r.op}: outcome unknown after ${r.attempts} attempt(s) (statuses ${r.statuses.join(', ')})`);
  }

  /** The stream's replica of a turn: its agent text and each tool's last status. */
  replicaOf(turnId: string): { text: string; tools: Record<string, string> } {
    let text = '';
    const tools: Record<string, string> = {};
    for (const e of this.events) {
      const update = e.data.params?.update as { sessionUpdate?: string; content?: { text?: string }; toolCallId?: string; status?: string; _meta?: Record<string, unknown> } | undefined;
      if (!update || update._meta?.['hub/turnId'] !== turnId) continue;
      if (update.sessionUpdate === 'agent_message_chunk') text += update.content?.text ?? '';
      if ((update.sessionUpdate === 'tool_call' || update.sessionUpdate === 'tool_call_update') && update.toolCallId && update.status) tools[update.toolCallId] = update.status;
    }
    return { text, tools };
  }

  checkInvariants(invariants: readonly Invariant[], violations: CaseResult['violations'], states: Map<string, unknown>, run: CaseContext): void {
    const resolvedCount = (requestId: string): number => this.#kinds('permission_resolved').filter((e) => e.data.params?.data?.['requestId'] === requestId).length;
    for (const reply of this.replies) {
      const resolved = this.#kinds('permission_resolved').find((e) => e.data.params?.data?.['requestId'] === reply.requestId);
      const won = (resolved?.data.params?.data?.['outcome'] as { optionId?: string } | undefined)?.optionId;
      if (invariants.includes('outcome-known') && reply.belief === 'refused' && won === reply.optionId && this.replies.length === 1)
        violations.push({ invariant: 'outcome-known', detail: `${this.name} believes reply ${reply.op} was refused, but the hub resolved the request with its option ${won}` });
      if (invariants.includes('acked-kept') && reply.belief.startsWith('accepted') && won !== reply.optionId)
        violations.push({ invariant: 'acked-kept', detail: `reply ${reply.op} was accepted but the request was resolved with ${won ?? 'nothing'}` });
      if (invariants.includes('applied-once') && resolvedCount(reply.requestId) > 1) violations.push({ invariant: 'applied-once', detail: `request ${reply.requestId} was resolved ${resolvedCount(reply.requestId)} times on the stream` });
    }
    if (!invariants.includes('replicas-converge')) return;
    for (const s of run.sessions.values()) {
      const chat = states.get(s.chat) as { turns?: Array<{ id: string; responseParts: Array<{ kind: string; content?: string; toolCall?: { toolCallId: string; status: string } }> }> } | undefined;
      for (const turn of chat?.turns ?? []) {
        const hub = {
          text: turn.responseParts
            .filter((p) => p.kind === 'markdown')
            .map((p) => p.content ?? '')
            .join(''),
          tools: Object.fromEntries(turn.responseParts.filter((p) => p.kind === 'toolCall').map((p) => [p.toolCall!.toolCallId, p.toolCall!.status])),
        };
        const mine = this.replicaOf(turn.id);
        if (JSON.stringify(mine) !== JSON.stringify(hub))
          violations.push({ invariant: 'replicas-converge', detail: `${this.name}'s stream replica of ${turn.id} is ${JSON.stringify(mine).slice(0, 160)}, the hub has ${JSON.stringify(hub).slice(0, 160)}` });
      }
    }
  }

  close(): void {
    this.#stream?.close();
  }
}

function headerOf(headers: HttpAnswer['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function waitUntil<T>(what: string, check: () => T | undefined | false, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(10);
  }
}
