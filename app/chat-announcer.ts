/**
 * Polite announcements of a chat for screen readers: a new question, a tool waiting for approval,
 * a turn's end — each once, and nothing that had happened before the page opened.
 */
import type { ChatState } from '../shared/client/ahp-client.js';
import type { InputRequestPart, ToolCallState } from '../shared/protocol/state.js';
import { el } from './dom.js';

export class ChatAnnouncer {
  readonly el = el('div', { class: 'sr-only', attrs: { role: 'status', 'aria-live': 'polite', 'data-testid': 'announcer' } });
  readonly #announced = new Set<string>();
  #primed = false;

  /**
   * Says what newly needs someone, once each: questions and tools waiting for approval (what a
   * sighted person notices on screen), and a turn's end. Streaming text is not read out.
   */
  announce(chat: ChatState): void {
    const news: string[] = [];
    const once = (key: string, text: string): void => {
      if (this.#announced.has(key)) return;
      this.#announced.add(key);
      news.push(text);
    };
    if (!this.#primed) {
      // What had happened before the page opened is history, not news.
      this.#primed = true;
      for (const t of chat.turns) this.#announced.add(`e:${t.id}`);
    }
    for (const part of chat.activeTurn?.responseParts ?? []) {
      if (part.kind === 'inputRequest') {
        const p = part as InputRequestPart;
        if (p.response === undefined) once(`q:${p.request.id}`, `The agent asks: ${p.request.message ?? 'a question'}`);
      } else if (part.kind === 'toolCall') {
        const tool = (part as { toolCall: ToolCallState }).toolCall;
        if (tool.status === 'pending-confirmation') once(`t:${tool.toolCallId}`, `The agent wants to run ${tool.displayName || tool.toolName} and waits for approval.`);
      }
    }
    for (const t of chat.turns.slice(-3)) once(`e:${t.id}`, t.state === 'complete' ? 'The agent finished.' : t.state === 'cancelled' ? 'The turn was stopped.' : 'The turn failed.');
    if (news.length > 0) this.el.textContent = news.join(' ');
  }
}
