/**
 * An empty chat says what its agent can do; for the demo agent it offers the tour in one click,
 * an example script to try, and the script format.
 */
import { el } from './dom.js';

/** What the empty chat's buttons do. */
export interface EmptyChatActions {
  /** Starts the demo tour (a turn with a fixed message). */
  startTour(): void;
  /** Puts `script` into the composer, to be edited and sent. */
  useScript(script: string): void;
}

export function emptyChat(provider: string, canWrite: boolean, actions: EmptyChatActions): HTMLElement {
  if (provider !== 'demo') return el('p', { class: 'empty muted', text: 'No messages yet. Write a message below to start a turn.' });
  const example = JSON.stringify(
    {
      script: [
        { say: 'Checking the release…' },
        { ask: { id: 'confirm', message: 'Ship it?', questions: [{ id: 'ship', kind: 'boolean', title: 'Ship now', message: 'Ship the release now?', required: true }] } },
        { tool: { id: 'deploy', name: 'deploy', confirm: true } },
        { say: 'Done.' },
      ],
    },
    null,
    1,
  ).replace(/\n\s*/g, ' ');
  return el(
    'div',
    { class: 'empty card', attrs: { 'data-testid': 'empty-chat' } },
    el('strong', { text: 'This chat talks to the demo agent.' }),
    el('p', { class: 'muted', text: 'Send any message for a short tour: it asks one question of every kind (text, email, numbers, yes/no, choices), asks you to open a link, and waits for your approval before running a tool.' }),
    el(
      'div',
      { class: 'actions' },
      el('button', {
        class: 'primary',
        attrs: { type: 'button', 'data-testid': 'start-tour', disabled: canWrite ? undefined : 'disabled' },
        text: 'Start the demo tour',
        on: { click: actions.startTour },
      }),
      el('button', {
        attrs: { type: 'button', 'data-testid': 'use-script', disabled: canWrite ? undefined : 'disabled' },
        text: 'Try a script',
        on: { click: () => actions.useScript(example) },
      }),
    ),
    el(
      'details',
      { class: 'script-help' },
      el('summary', { text: 'Script format' }),
      el('p', { class: 'small', text: 'A message that is JSON with a "script" list runs its steps in order:' }),
      el(
        'ul',
        { class: 'small' },
        el('li', {}, el('code', { text: '{"say": "text"}' }), ' streams text'),
        el('li', {}, el('code', { text: '{"ask": {"id", "message", "questions": [...]}}' }), ' asks for input and waits'),
        el('li', {}, el('code', { text: '{"tool": {"id", "name", "confirm": true}}' }), ' runs a tool after approval'),
        el('li', {}, el('code', { text: '{"sleep": 1000}' }), ' waits, ', el('code', { text: '{"fail": "why"}' }), ' ends with an error'),
      ),
      el('pre', {}, el('code', { text: example })),
    ),
  );
}
