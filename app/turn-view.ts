/**
 * One turn of the transcript: the person's message, the response parts in stream order (each
 * view made once per position and updated in place, parts.ts) and the footer — working with
 * Stop while it runs; how it ended, when, and Retry / Resume / a new message after a failure.
 */
import type { ChatState } from '../shared/client/ahp-client.js';
import type { ChannelView } from '../shared/client/channel-view.js';
import type { ActiveTurn, ResponsePart, Turn } from '../shared/protocol/state.js';
import type { AppContext } from './context.js';
import { el, markdownInto, replaceChildren } from './dom.js';
import { endedAt, errorInWords, personName, relativeTime, type AnsweredBy } from './format.js';
import type { FollowUpResult } from './kept-text.js';
import type { PartView } from './part-view.js';
import { createPartView } from './parts.js';

/**
 * Turns this tab stopped, so their footer says "Stopped by you" at once. Other tabs read who
 * stopped it from the hub's stamp (`AnswerStamps.stoppedBy`).
 */
export const stoppedHere = new Set<string>();

export class TurnView {
  readonly el: HTMLElement;
  readonly #message = el('div', { class: 'user-message' });
  readonly #parts = el('div', { class: 'parts' });
  readonly #footer = el('div', { class: 'turn-footer muted small' });
  readonly #partViews: PartView[] = [];
  #lastTurn: Turn | ActiveTurn | undefined;
  #lastActive: boolean | undefined;
  #lastIsLast: boolean | undefined;
  #lastStoppedBy: AnsweredBy | undefined;

  constructor(
    private readonly ctx: AppContext,
    private readonly chat: ChannelView<ChatState>,
    readonly id: string,
    private readonly onAnswered: () => void,
    private readonly onGrew: () => void,
  ) {
    this.el = el('article', { class: 'turn', attrs: { 'data-turn': id } }, this.#message, this.#parts, this.#footer);
  }

  update(turn: Turn | ActiveTurn, active: boolean, handlers: TurnHandlers): void {
    const isLast = handlers.isLast;
    if (turn === this.#lastTurn && active === this.#lastActive && isLast === this.#lastIsLast && handlers.stoppedBy === this.#lastStoppedBy) return;
    this.#lastIsLast = isLast;
    this.#lastStoppedBy = handlers.stoppedBy;
    if (turn.message !== this.#lastTurn?.message) this.#renderMessage(turn.message.text);
    this.#lastTurn = turn;
    this.#lastActive = active;
    this.el.classList.toggle('active', active);
    const parts: readonly ResponsePart[] = turn.responseParts;
    // Parts are append-only (updated in place by index); a truncation replaces the turn view.
    parts.forEach((part, i) => {
      let view = this.#partViews[i];
      if (!view || view.el.dataset['kind'] !== part.kind) {
        view?.destroy();
        view = createPartView(part, { app: this.ctx, chat: this.chat, turnId: turn.id, onAnswered: this.onAnswered, onGrew: this.onGrew, sendFollowUp: handlers.onFollowUp }, active);
        view.el.dataset['kind'] = part.kind;
        if (this.#partViews[i]) this.#parts.replaceChild(view.el, this.#partViews[i]!.el);
        else this.#parts.append(view.el);
        this.#partViews[i] = view;
      }
      view.update(part, active);
    });
    while (this.#partViews.length > parts.length) {
      const v = this.#partViews.pop()!;
      v.destroy();
      v.el.remove();
    }
    if (active) {
      const stop = el('button', {
        class: 'link danger',
        attrs: { type: 'button', 'data-testid': 'stop', disabled: this.ctx.canWrite ? undefined : 'disabled' },
        text: 'Stop',
        on: { click: handlers.onStop },
      });
      replaceChildren(this.#footer, el('span', { class: 'spinner', attrs: { 'aria-hidden': 'true' } }), ' Working… ', stop);
    } else {
      const t = turn as Turn;
      const state = t.state === 'complete' ? 'Completed' : t.state === 'cancelled' ? this.#stoppedText(t.id, handlers.stoppedBy) : 'Failed';
      const ended = endedAt(t);
      const duration = typeof t.duration === 'number' ? ` ${t.state === 'cancelled' ? 'after' : 'in'} ${(t.duration / 1000).toFixed(1)} s` : '';
      // A failed last turn says what happened in words and offers the next step.
      // A turn a restart stopped is resumed: a new turn whose questions start with the answers given.
      const restarted = t.error?.errorType === 'hubRestarted';
      const nextSteps =
        t.error && isLast && this.ctx.canWrite
          ? el(
              'div',
              { class: 'actions' },
              restarted
                ? el('button', { class: 'primary', attrs: { type: 'button', 'data-testid': 'resume' }, text: 'Resume', on: { click: () => handlers.onResume(t.message.text, t.id) } })
                : el('button', { class: 'primary', attrs: { type: 'button', 'data-testid': 'retry' }, text: 'Retry', on: { click: () => handlers.onRetry(t.message.text) } }),
              el('button', { attrs: { type: 'button', 'data-testid': 'new-turn' }, text: 'Write a new message', on: { click: handlers.onNewTurn } }),
            )
          : null;
      replaceChildren(
        this.#footer,
        `${state}${duration}`,
        ended ? el('span', { class: 'ago', title: ended, attrs: { 'data-at': ended }, text: ` · ${relativeTime(ended)}` }) : null,
        t.error
          ? el(
              'div',
              { class: 'turn-error', attrs: { role: 'alert', 'data-testid': 'turn-error' } },
              // The error part (when the agent sent one) already says what failed.
              t.responseParts.some((p) => p.kind === 'error') ? null : el('div', { class: 'error-words', text: errorInWords(t.error.errorType, t.error.message) }),
              el('div', {
                class: 'muted small',
                text: restarted ? 'Nothing you sent was lost. Resume runs it again with the answers already given, or write a new message.' : 'Retry runs the same message again as a new turn; or write a new message.',
              }),
              nextSteps,
            )
          : null,
      );
    }
  }

  /** "Stopped by bob": this tab, or the hub's stamp of who stopped it; "Stopped" without one. */
  #stoppedText(turnId: string, by: AnsweredBy | undefined): string {
    if (stoppedHere.has(turnId) || (by && by.user === this.ctx.user)) return 'Stopped by you';
    return by ? `Stopped by ${personName(by.user, this.ctx.devMode)}` : 'Stopped';
  }

  #renderMessage(text: string): void {
    // A demo-agent script is JSON: show it as code rather than as a paragraph of braces.
    const trimmed = text.trim();
    if (trimmed.startsWith('{"script"')) {
      let steps = '';
      try {
        const parsed = JSON.parse(trimmed) as { script?: unknown[] };
        if (Array.isArray(parsed.script)) steps = ` (${parsed.script.length} step${parsed.script.length === 1 ? '' : 's'})`;
      } catch {
        // shown as text below
      }
      replaceChildren(this.#message, el('details', { class: 'script' }, el('summary', { text: `Demo-agent script${steps}` }), el('pre', {}, el('code', { text: trimmed.length > 4000 ? trimmed.slice(0, 4000) + '…' : trimmed }))));
    } else {
      const body = el('div', { class: 'markdown' });
      markdownInto(body, text);
      replaceChildren(this.#message, body);
    }
  }

  destroy(): void {
    for (const v of this.#partViews) v.destroy();
  }
}

export interface TurnHandlers {
  readonly isLast: boolean;
  /** Who stopped the turn (the hub's stamp), if it was stopped and the hub knows. */
  readonly stoppedBy: AnsweredBy | undefined;
  onStop(): void;
  onRetry(text: string): void;
  /** Starts a new turn that resumes `turnId` (its questions start with the answers given there). */
  onResume(text: string, turnId: string): void;
  onNewTurn(): void;
  onFollowUp(text: string): Promise<FollowUpResult>;
}
