/**
 * AHP chat actions → Agent Client Protocol `session/update` notifications, and the shapes of the
 * Qwen `_qwen/notify` frames, for SSE clients that speak ACP rather than AHP.
 *
 * | AHP action                         | ACP `sessionUpdate`                                    |
 * |------------------------------------|--------------------------------------------------------|
 * | `chat/turnStarted`                 | `user_message_chunk` (the prompt text)                 |
 * | `chat/delta`, markdown part        | `agent_message_chunk`                                  |
 * | `chat/reasoning`, reasoning part   | `agent_thought_chunk`                                  |
 * | `chat/toolCallStart`               | `tool_call` (status `pending`)                         |
 * | `chat/toolCallReady`               | `tool_call_update` (`rawInput`; `in_progress` if it needs no confirmation) |
 * | `chat/toolCallConfirmed`           | `tool_call_update` (`in_progress`, or `failed` when denied) |
 * | `chat/toolCallComplete`            | `tool_call_update` (`completed` / `failed` + content)  |
 * Every update carries `_meta: {"hub/chat", "hub/turnId"}` so multi-chat sessions stay legible.
 */
import type { KnownAction } from '../../shared/protocol/actions.js';
import type { ChatInputQuestion } from '../../shared/protocol/state.js';

import { JSONRPC } from '../../shared/protocol/messages.js';

export type OptionKind = 'allow_once' | 'allow_always' | 'reject_once' | 'reject_always';
export interface PermissionOption {
  readonly optionId: string;
  readonly name: string;
  readonly kind: OptionKind;
}
export type PermissionOutcome = { readonly outcome: 'selected'; readonly optionId: string } | { readonly outcome: 'cancelled' };

export function sessionUpdate(sessionId: string, update: Record<string, unknown>, chat: string, turnId: string | undefined): unknown {
  const meta: Record<string, unknown> = { 'hub/chat': chat };
  if (turnId !== undefined) meta['hub/turnId'] = turnId;
  return { jsonrpc: JSONRPC, method: 'session/update', params: { sessionId, update: { ...update, _meta: meta } } };
}

export function qwenNotify(kind: string, data: Record<string, unknown>): unknown {
  return { jsonrpc: JSONRPC, method: '_qwen/notify', params: { kind, data } };
}

/** Hub-specific notifications (turn end) use their own `_hub/` namespace, never Qwen's. */
export function hubNotify(kind: string, data: Record<string, unknown>): unknown {
  return { jsonrpc: JSONRPC, method: '_hub/notify', params: { kind, data } };
}

/** ACP tool kind from a tool name (a UI hint only). */
export function acpToolKind(toolName: string): string {
  const n = toolName.toLowerCase();
  if (/(^|_)(read|view|cat|open)/.test(n)) return 'read';
  if (/(write|edit|patch|replace|create_file)/.test(n)) return 'edit';
  if (/(delete|remove|rm)(_|$)/.test(n)) return 'delete';
  if (/(move|rename)/.test(n)) return 'move';
  if (/(search|grep|find|glob)/.test(n)) return 'search';
  if (/(shell|bash|exec|run|command|terminal)/.test(n)) return 'execute';
  if (/(fetch|http|web|url)/.test(n)) return 'fetch';
  return 'other';
}

/** AHP tool input is a string (usually JSON) or a content reference; ACP `rawInput` is any JSON. */
export function rawInputOf(toolInput: unknown): unknown {
  if (typeof toolInput !== 'string') return toolInput;
  try {
    return JSON.parse(toolInput) as unknown;
  } catch {
    return toolInput;
  }
}

function textContent(content: unknown): Array<Record<string, unknown>> | undefined {
  if (!Array.isArray(content)) return undefined;
  const out: Array<Record<string, unknown>> = [];
  for (const block of content) {
    if (block && typeof block === 'object' && (block as { type?: unknown }).type === 'text' && typeof (block as { text?: unknown }).text === 'string') {
      out.push({ type: 'content', content: { type: 'text', text: (block as { text: string }).text } });
    }
  }
  return out.length > 0 ? out : undefined;
}

/**
 * ACP's `rawOutput` for a finished tool (qwen serve sends one on every completed or failed tool
 * update): the structured result when the tool gave one, else its text output (and error).
 */
function rawOutputOf(result: { readonly success: boolean; readonly content?: unknown; readonly structuredContent?: unknown; readonly error?: unknown }): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const text = (textContent(result.content) ?? []).map((c) => (c['content'] as { text: string }).text).join('\n');
  const error = result.error as { message?: unknown } | undefined;
  return result.success ? { output: text } : { output: text, error: typeof error?.message === 'string' ? error.message : 'the tool failed' };
}

/**
 * The `session/update` payloads (without envelope) one AHP chat action produces. Takes the typed
 * action (`CommitEvent.known`); an action type the hub does not know produces nothing.
 */
export function acpUpdatesFor(action: KnownAction | undefined): Array<Record<string, unknown>> {
  switch (action?.type) {
    case 'chat/turnStarted':
      return [{ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: action.message.text } }];
    case 'chat/delta':
      return [{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: action.content } }];
    case 'chat/reasoning':
      return [{ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: action.content } }];
    case 'chat/responsePart': {
      const part = action.part as { kind?: unknown; content?: unknown };
      if (typeof part.content !== 'string' || part.content === '') return [];
      if (part.kind === 'markdown') return [{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: part.content } }];
      if (part.kind === 'reasoning') return [{ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: part.content } }];
      return [];
    }
    case 'chat/toolCallStart':
      return [
        {
          sessionUpdate: 'tool_call',
          toolCallId: action.toolCallId,
          title: action.displayName,
          kind: acpToolKind(action.toolName),
          status: 'pending',
        },
      ];
    case 'chat/toolCallReady': {
      const update: Record<string, unknown> = { sessionUpdate: 'tool_call_update', toolCallId: action.toolCallId };
      if (action.toolInput !== undefined) update['rawInput'] = rawInputOf(action.toolInput);
      if (action.confirmed !== undefined) update['status'] = 'in_progress';
      return [update];
    }
    case 'chat/toolCallConfirmed':
      return [{ sessionUpdate: 'tool_call_update', toolCallId: action.toolCallId, status: action.approved ? 'in_progress' : 'failed' }];
    case 'chat/toolCallComplete': {
      const update: Record<string, unknown> = {
        sessionUpdate: 'tool_call_update',
        toolCallId: action.toolCallId,
        status: action.result.success ? 'completed' : 'failed',
      };
      const content = textContent(action.result.content);
      if (content) update['content'] = content;
      update['rawOutput'] = rawOutputOf(action.result);
      return [update];
    }
    default:
      return [];
  }
}

/**
 * Qwen's `ask_user_question` question shape (`question`, `header`, `options[{label, description}]`,
 * `multiSelect`), extended with the AHP fields a richer client needs (`id`, `kind`, `required`,
 * `min`/`max`, option `id`s, `allowFreeformInput`). The array index is the `Answers` key.
 */
export function qwenQuestion(q: ChatInputQuestion): Record<string, unknown> {
  const out: Record<string, unknown> = {
    question: typeof q.message === 'string' ? q.message : '',
    header: typeof q.title === 'string' ? q.title : q.id,
    id: q.id,
    kind: q.kind,
    required: q.required === true,
  };
  const options = (q as { options?: unknown }).options;
  if (Array.isArray(options)) {
    out['options'] = options.map((o: { id: string; label: string; description?: string }) => (o.description !== undefined ? { id: o.id, label: o.label, description: o.description } : { id: o.id, label: o.label }));
  }
  out['multiSelect'] = q.kind === 'multi-select';
  for (const key of ['min', 'max', 'allowFreeformInput', 'format', 'defaultValue'] as const) {
    if ((q as Record<string, unknown>)[key] !== undefined) out[key] = (q as Record<string, unknown>)[key];
  }
  return out;
}
