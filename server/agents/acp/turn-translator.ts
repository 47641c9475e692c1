/**
 * One AHP turn of an ACP agent: turns the agent's `session/update` notifications, permission
 * requests and elicitations into AHP actions on the turn's chat, and the hub's decisions back into
 * ACP answers.
 *
 * Every translation dispatches synchronously (the hub decides and sequences inside the call), so
 * AHP actions keep the agent's order without a queue; `flush()` waits until they are durable.
 *
 * | ACP                                   | AHP                                                            |
 * |---------------------------------------|----------------------------------------------------------------|
 * | `agent_message_chunk`                 | markdown `chat/responsePart` + `chat/delta`                    |
 * | `agent_thought_chunk`                 | reasoning `chat/responsePart` + `chat/reasoning`               |
 * | `tool_call` / `tool_call_update`      | `chat/toolCallStart` → `Ready` → `Complete`, by the agent's status |
 * | `plan`                                | a markdown part with the plan as a checklist                   |
 * | `usage_update`, `_meta.usage`         | `chat/usage`                                                   |
 * | `session/request_permission`          | `chat/toolCallReady` without `confirmed` (pending-confirmation, also from running) |
 * | `elicitation/create` form / url       | `chat/inputRequested` (questions / url)                        |
 */
import type * as acp from '@agentclientprotocol/sdk';
import type { WireAction } from '../../../shared/protocol/messages.js';
import type { ChatInputRequest, ToolCallState } from '../../../shared/protocol/state.js';
import { findDecidedToolCall } from '../../../shared/state/selectors.js';
import { ANSWERED_BY_META, answeredByIn, type AnsweredBy } from '../../../shared/state/answered-by.js';
import type { Logger } from '../../log.js';
import { errorFields } from '../../log.js';
import type { TurnContext } from '../agent.js';
import { MAX_TEXT, clip, confirmationOptions, contentBlockText, elicitationContent, planMarkdown, permissionOutcome, questionsFromSchema, toolContent, toolInputText, toolLocations } from '../../acp-mapping/index.js';

/**
 * What one turn may make the hub hold and log: response parts, and the characters of every
 * update the agent sends (text, tool input and output, usage), since each one is a log record.
 */
export const TURN_LIMITS = { parts: 2_000, chars: 5_000_000 } as const;

type LocalToolStatus = 'streaming' | 'pending-confirmation' | 'running' | 'done';

interface TrackedTool {
  readonly id: string;
  title: string;
  kind: string | undefined;
  name: string | undefined;
  rawInput: unknown;
  locations: readonly acp.ToolCallLocation[] | null | undefined;
  status: LocalToolStatus;
  /**
   * Who approved or denied it (the hub's stamp on `chat/toolCallConfirmed`). Every later tool
   * action replaces the tool's `_meta`, so the stamp is carried on in it, or "Approved by …"
   * would vanish the moment the tool runs or completes.
   */
  answeredBy?: AnsweredBy | undefined;
  /** JSON of the content last dispatched: a re-send of the same content is not sent again. */
  sentContent?: string;
  /** True while a content change is not yet durable; newer content then waits in `nextContent`. */
  contentInFlight?: boolean;
  /** The newest content waiting: a newer whole-content re-send replaces it, so only the latest is logged. */
  nextContent?: { readonly content: ReturnType<typeof toolContent>; readonly json: string };
}

class TurnAbortedError extends Error {}

export class TurnTranslator {
  readonly #pending = new Set<Promise<unknown>>();
  readonly #tools = new Map<string, TrackedTool>();
  /** Open URL elicitations: elicitationId → AHP input request id. */
  readonly #urlElicitations = new Map<string, string>();
  /** `elicitation/complete` that overtook its own `elicitation/create` (handlers may run out of order). */
  readonly #earlyCompletions = new Set<string>();
  readonly #aborters = new Set<() => void>();
  #textPart: { id: string; kind: 'markdown' | 'reasoning' } | undefined;
  #lastPlan: string | undefined;
  #parts = 0;
  #chars = 0;
  #overLimit = false;

  constructor(
    private readonly ctx: TurnContext,
    private readonly newId: () => string,
    private readonly logger: Logger,
  ) {}

  // ─── Updates ───────────────────────────────────────────────────────────────

  onUpdate(update: acp.SessionUpdate): void {
    if (this.ctx.signal.aborted) return;
    switch (update.sessionUpdate) {
      case 'agent_message_chunk':
        this.#usageFromMeta(update._meta);
        return this.#text('markdown', contentBlockText(update.content));
      case 'agent_thought_chunk':
        return this.#text('reasoning', contentBlockText(update.content));
      case 'tool_call':
        return this.#toolCall(update);
      case 'tool_call_update':
        return this.#toolCallUpdate(update);
      case 'plan':
        return this.#plan(update);
      case 'usage_update': {
        const usage: Record<string, unknown> = { inputTokens: Math.max(0, update.used), contextWindow: update.size };
        if (update.cost) usage['cost'] = update.cost;
        if (!this.#budget(JSON.stringify(usage).length, 0)) return;
        this.#dispatch({ type: 'chat/usage', turnId: this.ctx.turnId, usage });
        return;
      }
      default:
        // user_message_chunk (our own prompt echoed), commands, modes, config, session info:
        // nothing a chat shows.
        return;
    }
  }

  /** Qwen Code reports token usage in `_meta.usage` of an (empty) message chunk. */
  #usageFromMeta(meta: Record<string, unknown> | null | undefined): void {
    const usage = meta?.['usage'] as Record<string, unknown> | undefined;
    if (!usage || typeof usage !== 'object') return;
    const out: Record<string, number> = {};
    for (const key of ['inputTokens', 'outputTokens', 'totalTokens', 'thoughtTokens', 'cachedReadTokens']) {
      const v = usage[key];
      if (typeof v === 'number' && Number.isFinite(v) && v >= 0) out[key] = v;
    }
    if (Object.keys(out).length > 0 && this.#budget(JSON.stringify(out).length, 0)) this.#dispatch({ type: 'chat/usage', turnId: this.ctx.turnId, usage: out });
  }

  #text(kind: 'markdown' | 'reasoning', text: string): void {
    if (text.length === 0) return;
    if (!this.#budget(text.length, this.#textPart?.kind === kind ? 0 : 1)) return;
    const turnId = this.ctx.turnId;
    if (this.#textPart?.kind !== kind) {
      this.#textPart = { id: this.newId(), kind };
      this.#dispatch({ type: 'chat/responsePart', turnId, part: { kind, id: this.#textPart.id, content: '' } });
    }
    this.#dispatch({ type: kind === 'markdown' ? 'chat/delta' : 'chat/reasoning', turnId, partId: this.#textPart.id, content: clip(text) });
  }

  #plan(plan: acp.Plan): void {
    const markdown = planMarkdown(plan);
    if (markdown === this.#lastPlan || !this.#budget(markdown.length, 1)) return;
    this.#lastPlan = markdown;
    this.#textPart = undefined;
    const id = this.newId();
    this.#dispatch({ type: 'chat/responsePart', turnId: this.ctx.turnId, part: { kind: 'markdown', id, content: '', _meta: { 'acp/plan': true } } });
    this.#dispatch({ type: 'chat/delta', turnId: this.ctx.turnId, partId: id, content: markdown });
  }

  /** Counts what this turn makes the hub hold; past the limit the rest is dropped (logged once). */
  #budget(chars: number, parts: number): boolean {
    if (this.#overLimit) return false;
    if (this.#chars + chars > TURN_LIMITS.chars || this.#parts + parts > TURN_LIMITS.parts) {
      this.#overLimit = true;
      this.logger.warn('agent output over the per-turn limit; the rest of this turn is not shown', { turnId: this.ctx.turnId });
      this.#dispatch({
        type: 'chat/responsePart',
        turnId: this.ctx.turnId,
        part: { kind: 'systemNotification', content: 'The agent sent more output than the hub keeps for one turn; the rest is not shown.' },
      });
      return false;
    }
    this.#chars += chars;
    this.#parts += parts;
    return true;
  }

  // ─── Tool calls ────────────────────────────────────────────────────────────

  /** Every tool action carries the whole `_meta` (reducers replace it): the ACP kind and locations. */
  #toolMeta(tool: TrackedTool): Record<string, unknown> {
    const meta: Record<string, unknown> = {};
    if (tool.kind) meta['acp/kind'] = tool.kind;
    if (tool.answeredBy) meta[ANSWERED_BY_META] = tool.answeredBy;
    const locs = toolLocations(tool.locations);
    if (locs.length > 0) meta['acp/locations'] = locs;
    return meta;
  }

  /** The tracked tool with this id; a new one is started (`chat/toolCallStart`) while the budget allows. */
  #startTool(update: acp.ToolCallUpdate & { title?: string | null }): TrackedTool | undefined {
    const existing = this.#tools.get(update.toolCallId);
    if (existing) return existing;
    if (!this.#budget(0, 1)) return undefined;
    const metaName = (update._meta as Record<string, unknown> | null | undefined)?.['toolName'];
    const tool: TrackedTool = {
      id: clip(update.toolCallId, 256),
      title: clip(update.title || update.toolCallId, 256),
      kind: update.kind ?? undefined,
      name: typeof metaName === 'string' ? metaName : (update.name ?? undefined),
      rawInput: update.rawInput,
      locations: update.locations,
      status: 'streaming',
    };
    this.#tools.set(update.toolCallId, tool);
    this.#textPart = undefined;
    this.#dispatch({
      type: 'chat/toolCallStart',
      turnId: this.ctx.turnId,
      toolCallId: tool.id,
      toolName: clip(tool.name ?? tool.kind ?? 'tool', 256),
      displayName: tool.title,
      _meta: this.#toolMeta(tool),
    });
    return tool;
  }

  #merge(tool: TrackedTool, update: acp.ToolCallUpdate): void {
    if (update.title) tool.title = clip(update.title, 256);
    if (update.kind) tool.kind = update.kind;
    if (update.rawInput !== undefined && update.rawInput !== null) tool.rawInput = update.rawInput;
    if (update.locations && update.locations.length > 0) tool.locations = update.locations;
  }

  #toolCall(update: acp.ToolCall): void {
    const tool = this.#startTool(update);
    if (tool) this.#advance(tool, update);
  }

  #toolCallUpdate(update: acp.ToolCallUpdate): void {
    const tool = this.#startTool(update);
    if (!tool) return;
    this.#merge(tool, update);
    this.#advance(tool, update);
  }

  /** Moves the AHP tool call along as far as the agent's status says. */
  #advance(tool: TrackedTool, update: acp.ToolCallUpdate): void {
    const turnId = this.ctx.turnId;
    const status = update.status ?? undefined;
    if (tool.status === 'done' || tool.status === 'pending-confirmation') return;
    const meta = this.#toolMeta(tool);
    if (tool.status === 'streaming') {
      if (status === 'in_progress' || status === 'completed' || status === 'failed') {
        const ready: WireAction = { type: 'chat/toolCallReady', turnId, toolCallId: tool.id, invocationMessage: tool.title, confirmed: 'not-needed', _meta: meta };
        const input = toolInputText(tool.rawInput);
        if (input !== undefined) ready['toolInput'] = input;
        if (!this.#budget(tool.title.length + (input?.length ?? 0), 0)) return;
        this.#dispatch(ready);
        tool.status = 'running';
      } else {
        if (update.title && this.#budget(tool.title.length, 0)) this.#dispatch({ type: 'chat/toolCallDelta', turnId, toolCallId: tool.id, invocationMessage: tool.title });
        return;
      }
    }
    // running
    if (status === 'completed' || status === 'failed') {
      const content = toolContent(update.content);
      const result: Record<string, unknown> = { success: status === 'completed', pastTenseMessage: tool.title };
      if (content.length > 0) result['content'] = content;
      if (status === 'failed') result['error'] = { message: firstText(content) ?? `${tool.title} failed` };
      // The result carries the whole content: what still waited is replaced by it.
      tool.nextContent = undefined;
      tool.status = 'done';
      if (!this.#budget(JSON.stringify(result).length, 0)) return;
      this.#dispatch({ type: 'chat/toolCallComplete', turnId, toolCallId: tool.id, result, _meta: meta });
    } else if (update.content && update.content.length > 0) {
      const content = toolContent(update.content);
      this.#changeContent(tool, { content, json: JSON.stringify(content) });
    }
  }

  /**
   * ACP tools re-send their whole output with every update, and AHP replaces a tool's content
   * with each `chat/toolCallContentChanged`; the log would still keep every version. So the
   * same content is never sent twice, at most one change per tool is on its way at a time, and
   * newer content waiting behind it replaces the older: a tool that re-sends its output 10,000
   * times costs as many records as the log could take in meanwhile, not 10,000 whole copies.
   * Every version sent is charged to the turn's budget.
   */
  #changeContent(tool: TrackedTool, next: NonNullable<TrackedTool['nextContent']>): void {
    if (tool.contentInFlight) {
      tool.nextContent = next;
      return;
    }
    if (next.json === tool.sentContent || tool.status !== 'running' || this.ctx.signal.aborted) return;
    if (!this.#budget(next.json.length, 0)) return;
    tool.sentContent = next.json;
    tool.contentInFlight = true;
    const sent = this.#dispatch({ type: 'chat/toolCallContentChanged', turnId: this.ctx.turnId, toolCallId: tool.id, content: next.content, _meta: this.#toolMeta(tool) });
    void sent.then(() => {
      tool.contentInFlight = false;
      const waiting = tool.nextContent;
      tool.nextContent = undefined;
      if (waiting) this.#changeContent(tool, waiting);
    });
  }

  /**
   * `session/request_permission`: the tool waits in pending-confirmation with the agent's own
   * options; the first decision committed by the hub (any surface, or a remembered choice)
   * answers the agent. A cancelled turn answers `cancelled`.
   */
  async requestPermission(params: acp.RequestPermissionRequest): Promise<acp.RequestPermissionOutcome> {
    if (this.ctx.signal.aborted) return { outcome: 'cancelled' };
    const tool = this.#startTool({ ...params.toolCall, title: params.toolCall.title ?? params.toolCall.toolCallId });
    if (!tool) return { outcome: 'cancelled' };
    this.#merge(tool, params.toolCall);
    if (tool.status === 'done' || tool.status === 'pending-confirmation') {
      // An ended tool cannot run any more, and one already waiting has its own open request.
      this.logger.warn('permission asked for a tool that ended or already waits for an answer; answering cancelled', { toolCallId: tool.id, status: tool.status });
      return { outcome: 'cancelled' };
    }
    // A tool the agent already reported as running (OpenCode always does, before it asks) goes
    // back to pending-confirmation: AHP's `chat/toolCallReady` without `confirmed` does that.
    const wasRunning = tool.status === 'running';
    const ready: WireAction = {
      type: 'chat/toolCallReady',
      turnId: this.ctx.turnId,
      toolCallId: tool.id,
      invocationMessage: tool.title,
      confirmationTitle: clip(`Allow ${tool.title}?`, 256),
      options: confirmationOptions(params.options),
      _meta: this.#toolMeta(tool),
    };
    const input = toolInputText(tool.rawInput);
    if (input !== undefined) ready['toolInput'] = input;
    const asked = this.#dispatch(ready);
    tool.status = 'pending-confirmation';
    let decided: ToolCallState;
    try {
      // A running tool counts as decided: wait until it is back in pending-confirmation (durable),
      // or the earlier `running` would read as an approval nobody gave.
      if (wasRunning && !(await this.#abortable(asked))) {
        tool.status = 'running';
        return { outcome: 'cancelled' };
      }
      decided = await this.#abortable(this.ctx.waitFor((state) => findDecidedToolCall(state, tool.id), tool.id));
    } catch {
      tool.status = 'done';
      return { outcome: 'cancelled' };
    }
    tool.status = decided.status === 'running' ? 'running' : 'done';
    tool.answeredBy = answeredByIn(decided._meta);
    return permissionOutcome(params.options, decided as Parameters<typeof permissionOutcome>[1]);
  }

  // ─── Elicitation ───────────────────────────────────────────────────────────

  async elicit(params: acp.CreateElicitationRequest): Promise<acp.CreateElicitationResponse> {
    if (this.ctx.signal.aborted) return { action: 'cancel' };
    const id = this.newId();
    const message = clip(params.message || 'The agent asks for input.');
    let request: ChatInputRequest;
    let elicitationId: string | undefined;
    let questions: NonNullable<ChatInputRequest['questions']> = [];
    if (params.mode === 'url') {
      const url = (params as { url?: unknown }).url;
      if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) return { action: 'decline' };
      request = { id, message, url: clip(url, 4096) };
      elicitationId = String((params as { elicitationId?: unknown }).elicitationId);
      this.#urlElicitations.set(elicitationId, id);
    } else if (params.mode === 'form') {
      const q = questionsFromSchema((params as { requestedSchema: acp.ElicitationSchema }).requestedSchema);
      if (!q) return { action: 'decline' };
      questions = q;
      request = { id, message, questions };
    } else {
      return { action: 'decline' };
    }
    if (!this.#budget(message.length, 1)) return { action: 'cancel' };
    this.#textPart = undefined;
    try {
      const asked = this.ctx.requestInput(request);
      if (elicitationId !== undefined && this.#earlyCompletions.delete(elicitationId)) this.onElicitationComplete(elicitationId);
      const outcome = await this.#abortable(asked);
      if (outcome.response !== 'accept') return { action: outcome.response };
      if (params.mode === 'url') return { action: 'accept' };
      return { action: 'accept', content: elicitationContent(questions, outcome.answers) };
    } catch {
      return { action: 'cancel' };
    } finally {
      // Only this request's entry: an agent reusing the elicitation id has replaced it with its own.
      if (elicitationId !== undefined && this.#urlElicitations.get(elicitationId) === id) this.#urlElicitations.delete(elicitationId);
    }
  }

  /** The agent saw a URL elicitation finish out of band: the AHP request is done (accepted). */
  onElicitationComplete(elicitationId: string): void {
    const requestId = this.#urlElicitations.get(elicitationId);
    if (requestId === undefined) {
      if (this.#earlyCompletions.size < 64) this.#earlyCompletions.add(elicitationId);
      return;
    }
    this.#urlElicitations.delete(elicitationId);
    this.#dispatch({ type: 'chat/inputCompleted', requestId, response: 'accept' });
  }

  // ─── Turn end ──────────────────────────────────────────────────────────────

  /** Answers every open permission / elicitation `cancelled` (turn cancelled or ended). */
  cancelPending(): void {
    for (const abort of [...this.#aborters]) abort();
    this.#aborters.clear();
  }

  async endCancelled(): Promise<void> {
    await this.ctx.dispatch({ type: 'chat/turnCancelled', turnId: this.ctx.turnId, duration: 0 });
  }

  /** Waits until every action dispatched so far is durable. */
  async flush(): Promise<void> {
    // A settled tool-content change may send the content that waited behind it: wait for that too.
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  #abortable<T>(promise: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const abort = (): void => reject(new TurnAbortedError('turn ended'));
      this.#aborters.add(abort);
      promise.then(resolve, reject).finally(() => this.#aborters.delete(abort));
    });
  }

  /** Dispatches; the promise settles (never rejects) once the action is durable (true) or refused (false). */
  #dispatch(action: WireAction): Promise<boolean> {
    let p: Promise<unknown>;
    try {
      p = this.ctx.dispatch(action);
    } catch (err) {
      p = Promise.reject(err);
    }
    const tracked = p.then(
      () => true,
      (err: unknown) => {
        if (!this.ctx.signal.aborted) this.logger.warn('agent update not applied', { type: action.type, ...errorFields(err) });
        return false;
      },
    );
    this.#pending.add(tracked);
    void tracked.finally(() => this.#pending.delete(tracked));
    return tracked;
  }
}

/** The first non-empty text, cut at MAX_TEXT. */
function firstText(content: ReadonlyArray<{ type: string; text?: unknown }>): string | undefined {
  for (const c of content) if (typeof c.text === 'string' && c.text.length > 0) return c.text.slice(0, MAX_TEXT);
  return undefined;
}
