/**
 * Approve or deny a tool straight from the dashboard. The dashboard only has the session's
 * summary (its input-needed briefs), so this opens the chat, finds the tool still waiting for
 * confirmation, and dispatches the same `chat/toolCallConfirmed` the chat view's buttons do (the
 * agent's once-option when it offered its own; never a standing "always" option). The hub decides
 * first-wins exactly as for the chat view: a tab that lost the race is told who answered.
 */
import type { AhpClient, ChatState } from '../shared/client/ahp-client.js';
import { answeredByIn } from '../shared/state/answered-by.js';
import { findActiveToolCall, openInteractions } from '../shared/state/selectors.js';
import { sessionInputId } from '../shared/state/status.js';
import { el } from './dom.js';
import { answeredByText } from './format.js';
import { confirmationAction } from './permission-options.js';

/** A dashboard brief of a tool waiting for confirmation (`_meta["hub/inputNeeded"]` entry). */
export interface ToolBrief {
  readonly id: string;
  readonly chat: string;
  readonly kind: string;
}

/** What became of a dashboard approval, in words for the card. */
export type DashboardAnswer = { readonly ok: true } | { readonly ok: false; readonly message: string };

/** Opens the brief's chat, answers its waiting tool, and closes the chat again. */
export async function answerFromDashboard(client: AhpClient, brief: ToolBrief, approve: boolean, devMode: boolean): Promise<DashboardAnswer> {
  const chatUri = brief.chat as `ahp-chat:/${string}`;
  const view = await client.subscribe(chatUri);
  try {
    const state = view.state as ChatState;
    const turnId = state.activeTurn?.id;
    const open = openInteractions(state).find((o) => o.kind === 'toolConfirmation' && sessionInputId(brief.chat, o.toolCall.toolCallId) === brief.id);
    if (!turnId || !open || open.kind !== 'toolConfirmation') return { ok: false, message: 'This request was already answered.' };
    const action = confirmationAction(turnId, open.toolCall, approve);
    if (!action) return { ok: false, message: 'The agent offers no one-time choice for this: open the chat to pick one of its options.' };
    const result = await view.dispatch(action as unknown as { type: string });
    if (result.accepted) return { ok: true };
    // Lost the race: say who answered, as the chat view does.
    const now = findActiveToolCall(view.state as ChatState, open.toolCall.toolCallId);
    const by = answeredByIn(now?._meta);
    return { ok: false, message: by ? `Already answered by ${answeredByText(by, devMode)}.` : `Not applied: ${result.reason}` };
  } finally {
    client.unsubscribe(chatUri);
  }
}

/** Approve / Deny buttons for a tool brief on a dashboard card; the outcome shows beside them. */
export function dashboardApproval(client: AhpClient, brief: ToolBrief, options: { readonly canWrite: boolean; readonly devMode: boolean }): HTMLElement | null {
  if (brief.kind !== 'toolConfirmation' || !options.canWrite) return null;
  const note = el('span', { class: 'muted small', attrs: { 'data-testid': 'dashboard-answer', role: 'status' } });
  const buttons: HTMLButtonElement[] = [];
  const answer = async (approve: boolean): Promise<void> => {
    for (const b of buttons) b.disabled = true;
    note.textContent = approve ? 'Approving…' : 'Denying…';
    let outcome: DashboardAnswer;
    try {
      outcome = await answerFromDashboard(client, brief, approve, options.devMode);
    } catch {
      outcome = { ok: false, message: 'The hub did not take the answer. Open the chat and try again.' };
    }
    note.textContent = outcome.ok ? (approve ? 'Approved.' : 'Denied.') : outcome.message;
    for (const b of buttons) b.disabled = outcome.ok;
  };
  buttons.push(
    el('button', { class: 'primary small', attrs: { type: 'button', 'data-testid': 'dashboard-approve' }, text: 'Approve once', on: { click: () => void answer(true) } }),
    el('button', { class: 'danger small', attrs: { type: 'button', 'data-testid': 'dashboard-deny' }, text: 'Deny', on: { click: () => void answer(false) } }),
  );
  return el('span', { class: 'dashboard-approval' }, ' ', ...buttons, ' ', note);
}
