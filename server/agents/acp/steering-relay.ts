/**
 * Steering for ACP agents that offer the seed-003 mid-turn input extension
 * (`agentCapabilities._meta["tansr.com"].midTurnInput`). The hub's steering engine accepts an
 * input (a pending steering message in the chat); this relay forwards it to the agent with
 * `_tansr.com/session/steer` against the agent's own target, follows the agent's receipt with
 * `_tansr.com/session/input_status`, and marks exactly the inputs the agent consumed as consumed
 * in the hub. Inputs the agent refuses stay unconsumed and are closed when the turn ends.
 */
import type { ChatState } from '../../../shared/protocol/state.js';
import { acceptedUserInputs } from '../../../shared/state/selectors.js';
import type { Logger } from '../../log.js';
import { errorFields } from '../../log.js';
import type { TurnContext } from '../agent.js';

export { STEERING_EXTENSION } from '../../acp-mapping/extension.js';
import { STEERING_EXTENSION } from '../../acp-mapping/extension.js';

/** How often the relay asks the agent about inputs it accepted but has not consumed yet. */
const STATUS_POLL_MS = 150;

/** True when the agent's `initialize` answer advertises the extension. */
export function offersMidTurnInput(agentCapabilities: { _meta?: Record<string, unknown> | null } | undefined): boolean {
  const ext = agentCapabilities?._meta?.[STEERING_EXTENSION.metaKey] as { midTurnInput?: unknown } | undefined;
  return typeof ext?.midTurnInput === 'number' && ext.midTurnInput >= 1;
}

export interface AgentRequester {
  request<T>(method: string, params: Record<string, unknown>): Promise<T>;
}

interface PendingInput {
  readonly inputId: string;
  readonly text: string;
}

function pendingInputs(state: ChatState): PendingInput[] {
  return acceptedUserInputs(state).map(({ inputId, steering }) => ({ inputId, text: steering.message.text }));
}

/**
 * One turn's relay. `run()` forwards inputs until the turn ends; `settle()` (called when the
 * agent's prompt returned, before the turn completes) asks once more about inputs the agent
 * accepted, so those it consumed in its last step are consumed in the hub too.
 */
export class SteeringRelay {
  readonly #forwarded = new Set<string>();
  readonly #awaiting = new Set<string>();
  #target: unknown;
  #polling = false;

  constructor(
    private readonly ctx: TurnContext,
    private readonly agent: AgentRequester,
    private readonly acpSessionId: string,
    private readonly logger: Logger,
  ) {}

  async run(): Promise<void> {
    try {
      for (;;) {
        const fresh = await this.ctx.waitFor((state) => {
          const list = pendingInputs(state).filter((p) => !this.#forwarded.has(p.inputId));
          return list.length > 0 ? list : undefined;
        });
        for (const input of fresh) await this.#forward(input);
        void this.#poll().catch((err: unknown) => {
          if (!this.ctx.signal.aborted) this.logger.warn('steering status poll failed', errorFields(err));
        });
      }
    } catch (err) {
      if (!this.ctx.signal.aborted && !(err instanceof Error && err.name === 'AbortError')) this.logger.debug('steering relay stopped', errorFields(err));
    }
  }

  async settle(): Promise<void> {
    if (this.#awaiting.size === 0 || this.ctx.signal.aborted) return;
    try {
      await this.#checkOnce();
    } catch (err) {
      this.logger.warn('could not settle steering inputs', errorFields(err));
    }
  }

  async #forward(input: PendingInput): Promise<void> {
    this.#forwarded.add(input.inputId);
    this.#target ??= (await this.agent.request<{ target?: unknown }>(STEERING_EXTENSION.capabilities, { sessionId: this.acpSessionId })).target;
    if (!this.#target) {
      this.logger.info('agent has no open turn for steering input', { inputId: input.inputId });
      return;
    }
    const result = await this.agent.request<{ outcome?: string; code?: string }>(STEERING_EXTENSION.steer, {
      sessionId: this.acpSessionId,
      inputId: input.inputId,
      target: this.#target,
      content: { text: input.text },
      ack: 'memory',
    });
    if (result.outcome === 'accepted') this.#awaiting.add(input.inputId);
    else this.logger.info('agent refused a steering input', { inputId: input.inputId, outcome: result.outcome, code: result.code });
  }

  async #poll(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      while (this.#awaiting.size > 0 && !this.ctx.signal.aborted) {
        await new Promise((resolve) => setTimeout(resolve, STATUS_POLL_MS));
        await this.#checkOnce();
      }
    } finally {
      this.#polling = false;
    }
  }

  /** Asks the agent about every input it holds; marks the consumed ones consumed in the hub. */
  async #checkOnce(): Promise<void> {
    const consumed: string[] = [];
    for (const inputId of [...this.#awaiting]) {
      const status = await this.agent.request<{ receipt?: { state?: string } | null }>(STEERING_EXTENSION.status, { sessionId: this.acpSessionId, inputId, target: this.#target });
      const state = status.receipt?.state;
      if (state === 'consumed') consumed.push(inputId);
      if (state !== 'accepted') this.#awaiting.delete(inputId);
    }
    if (consumed.length > 0 && !this.ctx.signal.aborted) await this.ctx.barrier(consumed);
  }
}
