/**
 * Links to one turn or one approval of a chat: `/s/<session>?chat=<uri>#turn=<turn id>` and
 * `…#input=<input request or tool call id>`. Opening one scrolls to it and highlights it (search
 * results open this way too); every turn, question and tool step gets a small "Link" button
 * that copies its address. Lives beside the chat view (`chat-view.ts` calls `afterRender` after
 * each render, and builds older turns when a link points before its window).
 */
import type { ChatState } from '../shared/client/ahp-client.js';
import { hasTurn, turnOfInteraction } from '../shared/state/selectors.js';
import { copyButton } from './copy-button.js';

export type LinkTarget = { readonly kind: 'turn' | 'input'; readonly id: string };

export function linkTargetOf(hash: string): LinkTarget | undefined {
  const m = /^#(turn|input)=(.+)$/.exec(hash);
  if (!m) return undefined;
  try {
    return { kind: m[1] as LinkTarget['kind'], id: decodeURIComponent(m[2]!) };
  } catch {
    return undefined;
  }
}

/** The address of a turn or an approval in this chat. */
export function linkTo(chatUri: string, target: LinkTarget): string {
  return `${location.origin}${location.pathname}?chat=${encodeURIComponent(chatUri)}#${target.kind}=${encodeURIComponent(target.id)}`;
}

function cssString(text: string): string {
  return `"${text.replace(/["\\]/g, '\\$&')}"`;
}

export interface TurnLinkHost {
  /** Builds the chat's turns back to `turnId` when it is older than the ones shown. */
  showFrom(turnId: string): void;
  /** The person went to a linked place: new content must not pull the view to the end. */
  stopFollowing(): void;
}

export class TurnLinks {
  #target: LinkTarget | undefined = linkTargetOf(location.hash);
  #revealed = false;
  readonly #onHash = (): void => {
    this.#target = linkTargetOf(location.hash);
    this.#revealed = false;
  };

  constructor(
    private readonly chatUri: string,
    private readonly transcript: HTMLElement,
    private readonly host: TurnLinkHost,
  ) {
    window.addEventListener('hashchange', this.#onHash);
  }

  /** Scrolls to and highlights the linked place once it is built (after `addButtons` and the render). */
  afterRender(chat: ChatState): void {
    const target = this.#target;
    if (!target || this.#revealed) return;
    let node = this.#find(target);
    if (!node) {
      const turnId = target.kind === 'turn' ? (hasTurn(chat, target.id) ? target.id : undefined) : turnOfInteraction(chat, target.id);
      if (turnId === undefined) return;
      this.#revealed = true; // showFrom renders again, which calls back here
      this.host.showFrom(turnId);
      node = this.#find(target);
      if (!node) {
        this.#revealed = false;
        return;
      }
    }
    this.#revealed = true;
    this.host.stopFollowing();
    // An attribute, not a class: part views reset their className when they re-render.
    for (const old of this.transcript.querySelectorAll('[data-linked]')) old.removeAttribute('data-linked');
    node.setAttribute('data-linked', '');
    node.scrollIntoView({ block: 'center' });
  }

  #find(target: LinkTarget): HTMLElement | null {
    const id = cssString(target.id);
    return target.kind === 'turn' ? this.transcript.querySelector<HTMLElement>(`article.turn[data-turn=${id}]`) : this.transcript.querySelector<HTMLElement>(`.input-request[data-request=${id}], .part.tool[data-tool=${id}]`);
  }

  /**
   * A copy-link button on each turn, question and tool step. Called before the chat view decides
   * whether it is still at the end, since the buttons add height.
   */
  addButtons(): void {
    // A turn's goes into its footer (beside Stop, or after "Completed …"), which the turn view
    // rebuilds; questions and tool steps rebuild their content too. Each gets its one button back
    // (at the end) whenever it is missing or moved.
    const ensure = (host: Element, target: LinkTarget, label: string): void => {
      if (host.lastElementChild?.classList.contains('copy-link')) return;
      host.append(host.querySelector(':scope > .copy-link') ?? this.#button(target, label));
    };
    for (const footer of this.transcript.querySelectorAll<HTMLElement>('article.turn[data-turn] > .turn-footer')) {
      ensure(footer, { kind: 'turn', id: (footer.parentElement as HTMLElement).dataset['turn']! }, 'Copy a link to this turn');
    }
    for (const part of this.transcript.querySelectorAll<HTMLElement>('.input-request[data-request], .part.tool[data-tool]')) {
      ensure(part, { kind: 'input', id: part.dataset['request'] ?? part.dataset['tool']! }, 'Copy a link to this approval');
    }
  }

  #button(target: LinkTarget, ariaLabel: string): HTMLElement {
    const button = copyButton(() => linkTo(this.chatUri, target), { label: 'Link', testid: target.kind === 'turn' ? 'copy-turn-link' : 'copy-input-link', ariaLabel });
    button.classList.add('copy-link');
    button.title = ariaLabel;
    return button;
  }

  destroy(): void {
    window.removeEventListener('hashchange', this.#onHash);
  }
}
