/**
 * A resolved input request as a record: the outcome, each question with its answer in words, who
 * answered (the hub's stamp), and the text a typist was keeping when someone else ended it.
 */
import type { InputRequestPart } from '../shared/protocol/state.js';
import { answerInWords } from '../shared/state/transcript.js';
import { el, markdownInto, replaceChildren } from './dom.js';
import type { Q } from './form-fields.js';
import { answeredByOf, answeredByText, personName } from './format.js';
import type { KeptTextBox } from './kept-text.js';

/** Fills `host` with the record of `part`; `kept` (if any) is told how the request ended. */
export function renderRecord(host: HTMLElement, part: InputRequestPart, devMode: boolean, kept: KeptTextBox | undefined, hadFocus: boolean): void {
  const outcome = part.response === 'accept' ? 'Answered' : part.response === 'decline' ? 'Declined' : part.response === 'cancel' ? 'Cancelled' : 'Not answered (the turn ended first)';
  host.className = 'part input-request card resolved';
  host.setAttribute('data-response', part.response ?? 'none');
  const rows = (part.request.questions ?? []).map((q) =>
    el('li', {}, el('span', { class: 'q-title', text: `${(q as Q).title ?? q.id}: ` }), el('span', { class: 'answer', attrs: { 'data-answer': q.id }, text: answerInWords(part.request.answers?.[q.id], q) })),
  );
  const message = part.request.message ? el('div', { class: 'markdown muted' }) : null;
  if (message) markdownInto(message, part.request.message!);
  const by = answeredByOf((part as { _meta?: unknown })._meta);
  replaceChildren(
    host,
    el('div', { class: 'request-head' }, el('h2', { class: 'request-title', text: 'Input request' }), el('span', { class: `badge outcome-${part.response ?? 'none'}`, attrs: { 'data-testid': 'outcome' }, text: outcome })),
    message,
    part.request.url ? el('div', { class: 'muted small' }, 'Link: ', el('code', { text: part.request.url })) : null,
    rows.length > 0 ? el('ul', { class: 'answers' }, ...rows) : null,
    by ? el('div', { class: 'muted answered-by', attrs: { 'data-testid': 'answered-by' }, text: `${outcome} by ${answeredByText(by, devMode)}` }) : null,
    kept?.el,
  );
  if (kept) {
    const who = by ? personName(by.user, devMode) : undefined;
    const verb = part.response === 'accept' ? 'Submitted' : part.response === 'decline' ? 'Declined' : part.response === 'cancel' ? 'Cancelled' : undefined;
    kept.setOutcome(verb ? `${verb} by ${who === undefined || who === 'you' ? 'someone else' : who}` : 'The turn ended');
    if (hadFocus) kept.focus();
  }
}
