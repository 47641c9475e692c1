/**
 * Additions to the running turn (steering inputs): sent through the session's input contract
 * (shared/client/session-inputs.ts) with an id minted once and a careful retry, then followed by
 * their receipts until the agent took them or they were dropped; plus whether the running turn
 * takes additions at all (an agent without a mid-turn channel does not).
 */
import type { ChatState } from '../shared/client/ahp-client.js';
import type { InputReceipt, InputTarget, SessionInputs } from '../shared/client/session-inputs.js';
import { el } from './dom.js';
import { inputIdOf, newId, receiptInWords } from './format.js';

interface TrackedInput {
  readonly inputId: string;
  readonly text: string;
  readonly target: InputTarget;
  receipt?: InputReceipt;
  problem?: string;
}

/** What the additions tell the composer they belong to. */
export interface AdditionsHost {
  /** Not sent: say why (`detail` for hover). */
  refused(text: string, detail?: string): void;
  /** The addition is on its way: clear the composer. */
  taken(): void;
  /** A receipt or the turn's capability changed: render the composer again. */
  changed(): void;
}

export class TurnAdditions {
  readonly #inputs: TrackedInput[] = [];
  #poll: number | undefined;
  #destroyed = false;
  /** Why the running turn takes no additions (its agent has no mid-turn channel), checked once per turn. */
  #blocked: { turnId: string; reason: string | undefined } | undefined;

  constructor(
    private readonly steering: SessionInputs,
    private readonly host: AdditionsHost,
  ) {}

  /** Why the running turn of `chat` takes no additions, or undefined (checked once per turn). */
  blockedReason(chat: ChatState): string | undefined {
    const turnId = chat.activeTurn?.id;
    if (turnId === undefined) return undefined;
    if (this.#blocked?.turnId !== turnId) {
      this.#blocked = { turnId, reason: undefined };
      void this.steering.inputCapabilities().then(
        (caps) => {
          if (this.#blocked?.turnId !== turnId || !caps.targetUnavailable) return;
          this.#blocked = { turnId, reason: caps.targetUnavailable.message };
          this.host.changed();
        },
        () => undefined,
      );
    }
    return this.#blocked.reason;
  }

  /**
   * The receipts to show: this tab's additions to the latest turn (running or just ended), older
   * ones folded into one line, and other tabs' pending additions.
   */
  receipts(chat: ChatState): Array<HTMLElement | null> {
    const pendingSteering = [...(chat.steeringMessages ?? []), ...(chat.steeringMessage ? [chat.steeringMessage] : [])];
    const mine = new Set(this.#inputs.map((i) => i.inputId));
    const others = pendingSteering.filter((p) => !mine.has(inputIdOf(p)));
    const receipt = (i: TrackedInput): HTMLElement => {
      const state = i.problem ? 'not added' : (i.receipt?.state ?? 'sending');
      const words = receiptInWords(state, i.receipt?.reason);
      return el(
        'div',
        { class: `receipt receipt-${state.replace(/\s/g, '-')}`, attrs: { 'data-input': i.inputId, 'data-state': state } },
        el('span', { class: 'badge', text: words.badge }),
        ' ',
        el('span', { class: 'receipt-text', text: i.text.length > 140 ? i.text.slice(0, 140) + '…' : i.text }),
        i.problem ? el('span', { class: 'error small', text: ` — ${i.problem}` }) : words.why ? el('span', { class: 'muted small', text: ` — ${words.why}` }) : null,
      );
    };
    const latestTurn = chat.activeTurn?.id ?? chat.turns.at(-1)?.id;
    const current = this.#inputs.filter((i) => i.target.turnId === latestTurn);
    const ended = this.#inputs.filter((i) => !current.includes(i)).slice(-5);
    return [
      ended.length > 0
        ? el('details', { class: 'earlier-receipts small muted', attrs: { 'data-testid': 'earlier-receipts' } }, el('summary', { text: `${ended.length} addition${ended.length === 1 ? '' : 's'} to earlier turns` }), ...ended.map(receipt))
        : null,
      ...current.slice(-5).map(receipt),
      ...others.map((p) => el('div', { class: 'receipt receipt-accepted' }, el('span', { class: 'badge', text: 'pending (another tab)' }), ' ', el('span', { text: p.message.text }))),
    ];
  }

  /** Adds `text` to the running turn through the steering input contract, then follows its receipt. */
  async add(text: string): Promise<void> {
    let target: InputTarget | null;
    try {
      target = await this.steering.getInputTarget();
    } catch (err) {
      this.host.refused('Cannot add to the running turn right now (the hub did not answer). Try again in a moment.', (err as Error).message);
      return;
    }
    if (!target) {
      this.host.refused('The turn ended before your addition was sent; nothing was added. Send it again to start a new turn.');
      return;
    }
    // The id is minted once, with the target, before the first attempt (retry discipline).
    const tracked: TrackedInput = { inputId: newId(), text, target };
    this.#inputs.push(tracked);
    this.host.taken();
    this.host.changed();
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const result = await this.steering.submitInput({ inputId: tracked.inputId, target, content: { text } });
        if (result.outcome === 'accepted') tracked.receipt = result.receipt;
        else tracked.problem = result.outcome === 'closed' ? 'the turn had already ended; send it again to start a new turn' : `the hub did not take it: ${result.message}`;
        break;
      } catch {
        // Unknown outcome: ask first, resend the identical request only if the hub has no receipt.
        const known = await this.steering.getInputStatus(tracked.inputId, target).catch(() => null);
        if (known) {
          tracked.receipt = known;
          break;
        }
        if (attempt === 2) tracked.problem = 'not confirmed (the connection failed); check the chat before sending it again';
      }
    }
    this.host.changed();
    this.#schedulePoll();
  }

  #schedulePoll(): void {
    if (this.#poll !== undefined || this.#destroyed) return;
    this.#poll = window.setTimeout(() => void this.#pollReceipts(), 600);
  }

  async #pollReceipts(): Promise<void> {
    this.#poll = undefined;
    const open = this.#inputs.filter((i) => i.receipt && i.receipt.state === 'accepted');
    for (const i of open) {
      const receipt = await this.steering.getInputStatus(i.inputId, i.target).catch(() => undefined);
      if (receipt) i.receipt = receipt;
    }
    if (this.#destroyed) return;
    this.host.changed();
    if (this.#inputs.some((i) => i.receipt?.state === 'accepted')) this.#schedulePoll();
  }

  destroy(): void {
    this.#destroyed = true;
    window.clearTimeout(this.#poll);
  }
}
