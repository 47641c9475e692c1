/**
 * A session's standing grants, as people see them on the chat page and the audit page: the
 * hub-kept "always allow" / "always deny" choices (with *Forget* for users: the next confirmation
 * is asked again) and the grants the agent keeps (its own "Always allow in project" options,
 * chosen through the hub), each with who chose it, from where and when. The hub cannot revoke an
 * agent-kept grant, and the list says so instead of offering a Forget that would do nothing.
 */
import type { SessionState } from '../shared/protocol/state.js';
import { agentGrants, APPROVED_TOOLS_META, DENIED_TOOLS_META, rememberedChoiceBy, rememberedTools, type ChoiceStamp } from '../shared/state/selectors.js';
import { el } from './dom.js';
import { answeredByText } from './format.js';

/** One standing grant of a session, whoever keeps it. */
export interface StandingGrant {
  readonly toolName: string;
  readonly choice: 'always allowed' | 'always denied';
  readonly keptBy: 'hub' | 'agent';
  /** The agent's own label of the option chosen (agent-kept only). */
  readonly label?: string | undefined;
  readonly by?: ChoiceStamp | undefined;
}

/** Every standing grant the session state records: hub-kept first (allowed, denied), then agent-kept. */
export function standingGrantsOf(session: Pick<SessionState, '_meta'> | undefined): StandingGrant[] {
  const hubKept = (list: typeof APPROVED_TOOLS_META | typeof DENIED_TOOLS_META, choice: StandingGrant['choice']): StandingGrant[] =>
    rememberedTools(session, list).map((toolName) => ({ toolName, choice, keptBy: 'hub', by: rememberedChoiceBy(session, toolName) }));
  return [
    ...hubKept(APPROVED_TOOLS_META, 'always allowed'),
    ...hubKept(DENIED_TOOLS_META, 'always denied'),
    ...agentGrants(session).map((g): StandingGrant => ({ toolName: g.toolName, choice: 'always allowed', keptBy: 'agent', label: g.label, by: g.by })),
  ];
}

export interface GrantRowOptions {
  readonly canWrite: boolean;
  readonly devMode: boolean;
  /** Clears a hub-kept grant (`x-session/toolChoiceForgotten`). */
  readonly forget: (toolName: string) => void;
}

/** One list item: the tool, the choice, who chose it, and Forget or why there is none. */
export function grantRow(grant: StandingGrant, options: GrantRowOptions): HTMLLIElement {
  const who = grant.by ? el('span', { class: 'muted small', attrs: { 'data-testid': 'grant-by' }, text: ` · chosen by ${answeredByText(grant.by, options.devMode)}` }) : null;
  const revoke =
    grant.keptBy === 'agent'
      ? el('span', { class: 'muted small', attrs: { 'data-testid': 'agent-kept' }, text: ' · kept by the agent: only the agent can forget it' })
      : options.canWrite
        ? el('button', { class: 'link small', attrs: { type: 'button', 'data-testid': 'forget-choice' }, text: 'Forget', on: { click: () => options.forget(grant.toolName) } })
        : null;
  return el(
    'li',
    { attrs: { 'data-tool-choice': grant.toolName, 'data-kept-by': grant.keptBy } },
    el('code', { text: grant.toolName }),
    ` — ${grant.choice}${grant.label ? ` (“${grant.label}”)` : ''}`,
    who,
    revoke?.tagName === 'BUTTON' ? ' ' : '',
    revoke,
  );
}
