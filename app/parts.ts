/**
 * Views of response parts. Each part view is created once per position in a turn and updated in
 * place when its part object changes, so streaming text, forms and focus survive updates.
 */
import type { ResponsePart, ToolCallState } from '../shared/protocol/state.js';
import { el, markdownInto, replaceChildren } from './dom.js';
import { arrangeOptions, type ToolOption } from './permission-options.js';
import { answeredByOf, answeredByText, errorInWords, FROM_APP_META, wonRaceText } from './format.js';
import { InputRequestView } from './input-form.js';

export type { PartContext, PartView } from './part-view.js';
import type { PartContext, PartView } from './part-view.js';
import { StreamingMarkdown } from './markdown-stream.js';
import { toolStatusInWords } from '../shared/state/transcript.js';

export function createPartView(part: ResponsePart, ctx: PartContext, active: boolean): PartView {
  switch (part.kind) {
    case 'markdown':
      return new MarkdownView('md', ctx.onGrew);
    case 'reasoning':
      return new ReasoningView(ctx.onGrew);
    case 'toolCall':
      return new ToolCallView(ctx);
    case 'inputRequest':
      return new InputRequestView(ctx, part as Extract<ResponsePart, { kind: 'inputRequest' }>, active);
    default:
      return new GenericView();
  }
}

/**
 * Streamed text: only the unfinished tail block is rendered again (markdown-stream.ts). A slice is
 * rendered at once (the chat view already updates once per frame and measures the transcript
 * right after); a long part renders the rest over the next frames.
 */
class MarkdownView implements PartView {
  readonly el: HTMLElement;
  readonly #body: StreamingMarkdown;
  constructor(cls: string, onGrew?: () => void) {
    this.el = el('div', { class: `part ${cls} markdown` });
    this.#body = new StreamingMarkdown(this.el, onGrew);
  }
  update(part: ResponsePart): void {
    this.#body.set(typeof (part as { content?: unknown }).content === 'string' ? (part as { content: string }).content : '', true);
  }
  destroy(): void {}
}

class ReasoningView implements PartView {
  readonly el: HTMLElement;
  readonly #body: StreamingMarkdown;
  constructor(onGrew?: () => void) {
    const body = el('div', { class: 'markdown' });
    this.el = el('details', { class: 'part reasoning' }, el('summary', { text: 'Thinking' }), body);
    this.#body = new StreamingMarkdown(body, onGrew);
  }
  update(part: ResponsePart): void {
    const content = (part as { content?: unknown }).content;
    this.#body.set(typeof content === 'string' ? content : '', true);
  }
  destroy(): void {}
}

/** System notifications, errors, content references and kinds this app does not know. */
class GenericView implements PartView {
  readonly el = el('div', { class: 'part' });
  update(part: ResponsePart): void {
    const p = part as Record<string, unknown>;
    switch (part.kind) {
      case 'systemNotification': {
        this.el.className = 'part notice';
        const content = p['content'];
        const text = typeof content === 'string' ? content : typeof (content as { value?: unknown })?.value === 'string' ? (content as { value: string }).value : '';
        markdownInto(this.el, text);
        return;
      }
      case 'error': {
        const error = p['error'] as { message?: string; errorType?: string } | undefined;
        this.el.className = 'part error-part';
        // Words for people; the internal code stays available on hover for bug reports.
        this.el.title = error?.errorType ? `${error.errorType}: ${error.message ?? ''}` : '';
        replaceChildren(this.el, el('span', { class: 'error-words', text: errorInWords(error?.errorType, error?.message) }));
        return;
      }
      case 'userMessage': {
        // A steering addition the agent took during the turn (hub extension part).
        const message = p['message'] as { text?: unknown } | undefined;
        this.el.className = 'part user-addition';
        const body = el('div', { class: 'markdown' });
        markdownInto(body, typeof message?.text === 'string' ? message.text : '');
        replaceChildren(this.el, el('div', { class: 'muted small', text: 'Added to the running turn' }), body);
        return;
      }
      case 'contentRef':
        this.el.className = 'part muted';
        replaceChildren(this.el, 'Attached content: ', el('code', { text: String(p['uri'] ?? '') }));
        return;
      default:
        this.el.className = 'part muted';
        replaceChildren(this.el, `Unsupported part (${part.kind})`);
    }
  }
  destroy(): void {}
}

class ToolCallView implements PartView {
  readonly el = el('div', { class: 'part tool' });
  #last: ToolCallState | undefined;
  #busy = false;
  /** The hub's reason when this tab's answer was not applied (shown on hover, never as the text). */
  #refused: string | undefined;

  constructor(private readonly ctx: PartContext) {}

  update(part: ResponsePart, active: boolean): void {
    const tool = (part as { toolCall: ToolCallState }).toolCall;
    if (tool === this.#last && !this.#busy) return;
    this.#last = tool;
    this.#render(tool, active);
  }

  #render(tool: ToolCallState, active: boolean): void {
    const t = tool as ToolCallState & Record<string, unknown>;
    this.el.setAttribute('data-tool-status', tool.status);
    this.el.setAttribute('data-tool', tool.toolCallId);
    const head = el(
      'div',
      { class: 'tool-head' },
      el('span', { class: 'tool-icon', attrs: { 'aria-hidden': 'true' }, text: '⚙' }),
      el('strong', { text: tool.displayName || tool.toolName }),
      el('span', { class: `tool-status tool-${tool.status}`, attrs: { 'data-testid': 'tool-status' }, text: toolStatusInWords(tool) }),
    );
    const body: Array<HTMLElement | null> = [];
    const invocation = typeof t['invocationMessage'] === 'string' ? (t['invocationMessage'] as string) : undefined;
    if (typeof t['confirmationTitle'] === 'string') body.push(el('div', { class: 'tool-title', text: t['confirmationTitle'] as string }));
    if (invocation) {
      const msg = el('div', { class: 'markdown' });
      markdownInto(msg, invocation);
      body.push(msg);
    }
    const input = t['toolInput'];
    if (typeof input === 'string' && input) body.push(el('pre', { class: 'tool-input' }, el('code', { text: input.length > 4000 ? input.slice(0, 4000) + '…' : input })));
    if (tool.status === 'completed' || tool.status === 'pending-result-confirmation') {
      if (typeof t['pastTenseMessage'] === 'string') body.push(el('div', { class: 'muted', text: t['pastTenseMessage'] as string }));
      const content = t['content'];
      if (Array.isArray(content)) {
        const text = content
          .map((c: { type?: string; text?: unknown }) => (c.type === 'text' && typeof c.text === 'string' ? c.text : ''))
          .filter(Boolean)
          .join('\n');
        if (text) body.push(el('pre', { class: 'tool-output' }, el('code', { text: text.length > 4000 ? text.slice(0, 4000) + '…' : text })));
      }
      const error = t['error'] as { message?: string } | undefined;
      if (error?.message) body.push(el('div', { class: 'error', text: error.message }));
    }
    if (tool.status === 'cancelled') {
      const reason = String(t['reason'] ?? '');
      const option = (t['selectedOption'] as { label?: string } | undefined)?.label;
      body.push(
        el('div', {
          class: 'muted',
          text: `${reason === 'denied' ? 'Denied' : reason === 'result-denied' ? 'Result rejected' : 'Skipped'}${option ? ` (${option})` : ''}${typeof t['reasonMessage'] === 'string' ? `: ${t['reasonMessage'] as string}` : ''}`,
        }),
      );
    }
    if (tool.status === 'running' || tool.status === 'completed') {
      const option = (t['selectedOption'] as { label?: string } | undefined)?.label;
      if (option) body.push(el('div', { class: 'muted', text: `Approved: ${option}` }));
    }
    // Who approved or denied it, from which surface, and when (recorded by the hub).
    const by = answeredByOf(t['_meta']);
    if (by) {
      const verb = tool.status === 'cancelled' ? 'Denied by' : 'Approved by';
      body.push(el('div', { class: 'muted answered-by', attrs: { 'data-testid': 'answered-by' }, text: `${verb} ${answeredByText(by, this.ctx.app.devMode)}` }));
    }
    if (tool.status === 'auth-required') {
      const auth = t['auth'] as { description?: string; resource?: { resource?: string } } | undefined;
      body.push(el('div', { class: 'muted', text: auth?.description ?? `Sign-in needed for ${auth?.resource?.resource ?? 'a resource'}` }));
    }
    const actions = active ? this.#actions(tool) : null;
    replaceChildren(this.el, head, ...body, actions, this.#refusal(tool));
  }

  /**
   * Why this tab's approval or denial was not applied, in words: when someone else answered first
   * the tool has moved on, and the hub's stamp says who and what they chose.
   */
  #refusal(tool: ToolCallState): HTMLElement | null {
    if (this.#refused === undefined) return null;
    const t = tool as ToolCallState & Record<string, unknown>;
    const decided = tool.status !== 'pending-confirmation' && tool.status !== 'pending-result-confirmation';
    const option = (t['selectedOption'] as { label?: string } | undefined)?.label;
    const text = decided ? wonRaceText(answeredByOf(t['_meta']), tool.status !== 'cancelled', option, this.ctx.app.devMode) : 'Your answer was not applied. Reload the page and try again.';
    return el('div', { class: decided ? 'muted race-lost' : 'error', attrs: { role: 'alert', 'data-testid': 'tool-refusal' }, title: this.#refused, text });
  }

  #actions(tool: ToolCallState): HTMLElement | null {
    const disabled = !this.ctx.app.canWrite || this.#busy;
    const title = this.ctx.app.canWrite ? undefined : 'Viewers cannot answer';
    const scoped = { turnId: this.ctx.turnId, toolCallId: tool.toolCallId };
    const button = (text: string, cls: string, action: Record<string, unknown>): HTMLButtonElement =>
      el('button', {
        class: cls,
        attrs: { type: 'button', disabled: disabled ? 'disabled' : undefined, 'data-action': text },
        ...(title ? { title } : {}),
        text,
        on: { click: () => void this.#dispatch(action) },
      });
    if (tool.status === 'pending-confirmation') {
      const options = (tool as { options?: ToolOption[] }).options;
      if (!options || options.length === 0) {
        return el(
          'div',
          { class: 'actions' },
          button('Approve', 'primary', { type: 'chat/toolCallConfirmed', ...scoped, approved: true, confirmed: 'user-action' }),
          button('Deny', 'danger', { type: 'chat/toolCallConfirmed', ...scoped, approved: false, reason: 'denied' }),
        );
      }
      const choose = (o: ToolOption): Record<string, unknown> =>
        o.kind === 'approve'
          ? { type: 'chat/toolCallConfirmed', ...scoped, approved: true, confirmed: 'user-action', selectedOptionId: o.id }
          : { type: 'chat/toolCallConfirmed', ...scoped, approved: false, reason: 'denied', selectedOptionId: o.id };
      const { once, always } = arrangeOptions(options);
      const onceButtons = once.map((a, i) => button(a.text, a.option.kind === 'approve' ? (i === 0 ? 'primary' : 'secondary') : 'danger', choose(a.option)));
      const standing = always.map((a) => {
        const b = button(a.text, 'secondary small', choose(a.option));
        b.title = `${a.agentLabel ?? a.text}. A standing rule the agent keeps: later requests it covers are not asked again.`;
        b.setAttribute('data-standing', 'true');
        return b;
      });
      return el(
        'div',
        { class: 'tool-choices' },
        el('div', { class: 'actions', attrs: { 'data-testid': 'once-options' } }, ...onceButtons),
        standing.length > 0
          ? el('div', { class: 'actions standing-options', attrs: { 'data-testid': 'standing-options', role: 'group', 'aria-label': 'Standing grants' } }, el('span', { class: 'muted small', text: 'Or grant a standing rule:' }), ...standing)
          : null,
      );
    }
    if (tool.status === 'pending-result-confirmation') {
      return el(
        'div',
        { class: 'actions' },
        button('Accept result', 'primary', { type: 'chat/toolCallResultConfirmed', ...scoped, approved: true }),
        button('Reject result', 'danger', { type: 'chat/toolCallResultConfirmed', ...scoped, approved: false }),
      );
    }
    return null;
  }

  async #dispatch(action: Record<string, unknown>): Promise<void> {
    this.#busy = true;
    this.#refused = undefined;
    if (this.#last) this.#render(this.#last, true);
    const result = await this.ctx.chat.dispatch({ ...action, _meta: FROM_APP_META } as unknown as { type: string });
    this.#busy = false;
    this.#refused = result.accepted ? undefined : result.reason;
    const latest = this.#last;
    if (latest) this.#render(latest, true);
  }

  destroy(): void {}
}
