/**
 * A hub chat as ACP `session/update`s: what `session/load` and `session/attach` (history policy
 * `full`) replay, and what `pending_only` replays.
 */
import type { ChatState } from '../../shared/client/ahp-client.js';
import { openInteractions } from '../../shared/state/selectors.js';
import { acpToolKind, rawInputOf } from '../../server/acp-mapping/index.js';

/** What `historyPolicy: "pending_only"` replays: each tool call waiting for a permission, as a pending `tool_call` (the request follows). */
export function pendingUpdates(chat: ChatState): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const open of openInteractions(chat)) {
    if (open.kind !== 'toolConfirmation') continue;
    const tc = open.toolCall;
    out.push({
      sessionUpdate: 'tool_call',
      toolCallId: tc.toolCallId,
      title: tc.confirmationTitle ?? tc.displayName,
      kind: acpToolKind(tc.toolName),
      status: 'pending',
      ...(tc.toolInput !== undefined && { rawInput: rawInputOf(tc.toolInput) }),
    });
  }
  return out;
}

const ACP_TOOL_STATUS: Record<string, string> = { completed: 'completed', cancelled: 'failed', running: 'in_progress' };

/**
 * A chat's history as ACP `session/update`s, oldest first (what `session/load` replays): each
 * turn's user message, then its parts — agent text, thoughts, steering messages, and each tool
 * call once, with its final status.
 */
export function historyUpdates(chat: ChatState): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const turn of [...chat.turns, ...(chat.activeTurn ? [chat.activeTurn] : [])]) {
    out.push({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: turn.message.text } });
    for (const part of turn.responseParts) {
      const p = part as Record<string, unknown> & { kind: string };
      if (p.kind === 'markdown') out.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: p['content'] } });
      else if (p.kind === 'reasoning') out.push({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: p['content'] } });
      else if (p.kind === 'userMessage') out.push({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: (p['message'] as { text: string }).text } });
      else if (p.kind === 'toolCall') {
        const tc = p['toolCall'] as { toolCallId: string; toolName: string; displayName: string; status: string; toolInput?: unknown };
        const update: Record<string, unknown> = { sessionUpdate: 'tool_call', toolCallId: tc.toolCallId, title: tc.displayName, kind: acpToolKind(tc.toolName), status: ACP_TOOL_STATUS[tc.status] ?? 'pending' };
        if (tc.toolInput !== undefined) update['rawInput'] = rawInputOf(tc.toolInput);
        out.push(update);
      }
    }
  }
  return out;
}
