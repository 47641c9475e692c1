/**
 * What every view of a response part is (`PartView`) and what it is given (`PartContext`): the
 * types `parts.ts` (which picks the view for a part) and the part views share, in a module below
 * both so the form (input-form.ts) and the part factory do not import each other.
 */
import type { ChatState } from '../shared/client/ahp-client.js';
import type { ChannelView } from '../shared/client/channel-view.js';
import type { ResponsePart } from '../shared/protocol/state.js';
import type { AppContext } from './context.js';
import type { SendFollowUp } from './kept-text.js';

export interface PartContext {
  readonly app: AppContext;
  readonly chat: ChannelView<ChatState>;
  readonly turnId: string;
  /** Called when this tab submits answers, so the chat can bring what comes next into view. */
  readonly onAnswered?: () => void;
  /** Called when a part grew outside the chat view's own update (a long part catching up). */
  readonly onGrew?: () => void;
  /** Sends text to the agent through the chat's composer (a typist's kept answer, kept-text.ts). */
  readonly sendFollowUp?: SendFollowUp;
}

export interface PartView {
  readonly el: HTMLElement;
  update(part: ResponsePart, active: boolean): void;
  destroy(): void;
}
