/**
 * A chat's transcript as people read it — user messages, agent text, tool steps, answers given —
 * built once from the chat state and written out as JSON (`transcriptOf`) or Markdown
 * (`transcriptMarkdown`, rendered from the same entries, so both exports say the same). The words
 * for a tool's state and an answer are the ones the browser app shows. Pure, clock-free: the
 * export time comes in from the caller.
 */
import type { ActiveTurn, ChatInputAnswer, ChatInputQuestion, ChatState, InputRequestPart, ResponsePart, ToolCallState, Turn } from '../protocol/state.js';

export type TranscriptEntry =
  | { readonly kind: 'user'; readonly text: string }
  | { readonly kind: 'agent'; readonly text: string }
  | { readonly kind: 'tool'; readonly toolCallId: string; readonly name: string; readonly status: string; readonly statusText: string; readonly invocation?: string }
  | { readonly kind: 'input'; readonly requestId: string; readonly message: string; readonly outcome: string; readonly answers: ReadonlyArray<{ readonly questionId: string; readonly title: string; readonly answer: string }> }
  | { readonly kind: 'notice'; readonly text: string }
  | { readonly kind: 'error'; readonly text: string };

export interface TranscriptTurn {
  readonly id: string;
  readonly startedAt?: string;
  /** `running` for the active turn; else how the turn ended. */
  readonly state: 'complete' | 'cancelled' | 'error' | 'running';
  readonly entries: readonly TranscriptEntry[];
}

export interface Transcript {
  readonly format: 'ahp-hub-transcript';
  readonly version: 1;
  readonly session: string;
  readonly title: string;
  readonly chat: string;
  readonly chatTitle: string;
  readonly exportedAt: string;
  readonly turns: readonly TranscriptTurn[];
}

const TOOL_STATUS_TEXT: Readonly<Record<string, string>> = {
  streaming: 'Preparing',
  'pending-confirmation': 'Waiting for approval',
  running: 'Running',
  'auth-required': 'Needs sign-in',
  'pending-result-confirmation': 'Result needs review',
  completed: 'Done',
  cancelled: 'Cancelled',
};

/** A tool step's state in words; a cancelled one says why (denied, result rejected, skipped). */
export function toolStatusInWords(tool: ToolCallState): string {
  if (tool.status !== 'cancelled') return TOOL_STATUS_TEXT[tool.status] ?? tool.status;
  const reason = String((tool as { reason?: unknown }).reason ?? '');
  return reason === 'denied' ? 'Denied' : reason === 'result-denied' ? 'Result rejected' : 'Skipped';
}

/** An answer in words: option labels, Yes / No, free-form values; `—` when there is none. */
export function answerInWords(answer: ChatInputAnswer | undefined, question?: ChatInputQuestion): string {
  if (!answer) return '—';
  if (answer.state === 'skipped') return 'skipped';
  const v = answer.value as { kind: string; value?: unknown; freeformValues?: string[] };
  const options = (question as { options?: Array<{ id: string; label: string }> } | undefined)?.options;
  const label = (id: unknown): string => options?.find((o) => o.id === id)?.label ?? String(id);
  let text: string;
  if (v.kind === 'selected-many' && Array.isArray(v.value)) text = v.value.map(label).join(', ');
  else if (v.kind === 'selected') text = label(v.value);
  else if (v.kind === 'boolean') text = v.value ? 'Yes' : 'No';
  else text = String(v.value ?? '');
  const free = v.freeformValues?.filter((f) => !(v.kind === 'selected' && f === v.value));
  if (free && free.length > 0) text += `${text ? ', ' : ''}${free.join(', ')}`;
  return text || '—';
}

function outcomeInWords(response: InputRequestPart['response']): string {
  return response === 'accept' ? 'Answered' : response === 'decline' ? 'Declined' : response === 'cancel' ? 'Cancelled' : 'Not answered';
}

function entryOf(part: ResponsePart): TranscriptEntry | undefined {
  const p = part as ResponsePart & Record<string, unknown>;
  switch (part.kind) {
    case 'markdown':
      return typeof p['content'] === 'string' && p['content'] !== '' ? { kind: 'agent', text: p['content'] } : undefined;
    case 'toolCall': {
      const tool = (p as unknown as { toolCall: ToolCallState }).toolCall;
      const invocation = (tool as { invocationMessage?: unknown }).invocationMessage;
      return {
        kind: 'tool',
        toolCallId: tool.toolCallId,
        name: tool.displayName || tool.toolName,
        status: tool.status,
        statusText: toolStatusInWords(tool),
        ...(typeof invocation === 'string' && invocation !== '' && { invocation }),
      };
    }
    case 'inputRequest': {
      const { request, response } = part as InputRequestPart;
      const answers = (request.questions ?? []).map((q) => ({ questionId: q.id, title: typeof q.title === 'string' ? q.title : q.id, answer: answerInWords(request.answers?.[q.id], q) }));
      return { kind: 'input', requestId: request.id, message: request.message ?? '', outcome: outcomeInWords(response), answers };
    }
    case 'systemNotification': {
      const content = p['content'];
      const text = typeof content === 'string' ? content : typeof (content as { value?: unknown })?.value === 'string' ? (content as { value: string }).value : '';
      return text ? { kind: 'notice', text } : undefined;
    }
    case 'error': {
      const message = (p['error'] as { message?: unknown } | undefined)?.message;
      return { kind: 'error', text: typeof message === 'string' ? message : 'error' };
    }
    default:
      return undefined;
  }
}

function turnOf(turn: Turn | ActiveTurn, state: TranscriptTurn['state']): TranscriptTurn {
  const entries: TranscriptEntry[] = [{ kind: 'user', text: turn.message.text }];
  for (const part of turn.responseParts) {
    const entry = entryOf(part);
    if (entry) entries.push(entry);
  }
  const error = (turn as Turn).error;
  if (error && !turn.responseParts.some((p) => p.kind === 'error')) entries.push({ kind: 'error', text: error.message });
  return { id: turn.id, ...(turn.startedAt !== undefined && { startedAt: turn.startedAt }), state, entries };
}

export function transcriptOf(chat: ChatState, session: { readonly uri: string; readonly title: string }, exportedAt: string): Transcript {
  const turns = chat.turns.map((t) => turnOf(t, t.state));
  if (chat.activeTurn) turns.push(turnOf(chat.activeTurn, 'running'));
  return { format: 'ahp-hub-transcript', version: 1, session: session.uri, title: session.title, chat: chat.resource, chatTitle: chat.title, exportedAt, turns };
}

function entryMarkdown(e: TranscriptEntry): string {
  switch (e.kind) {
    case 'user':
      return `**User:**\n\n${e.text}`;
    case 'agent':
      return e.text;
    case 'tool':
      return `**Tool ${e.name}:** ${e.statusText}${e.invocation ? `\n\n${e.invocation}` : ''}`;
    case 'input': {
      const head = `**Input request:** ${e.message || '(no message)'} — ${e.outcome}`;
      return [head, ...(e.answers.length > 0 ? ['', ...e.answers.map((a) => `- ${a.title}: ${a.answer}`)] : [])].join('\n');
    }
    case 'notice':
      return `**Notice:** ${e.text}`;
    case 'error':
      return `**Error:** ${e.text}`;
  }
}

/** The transcript as Markdown: a heading per turn, then each entry as a paragraph, in order. */
export function transcriptMarkdown(t: Transcript): string {
  const blocks = [`# ${t.title}`];
  t.turns.forEach((turn, i) => {
    blocks.push(`## Turn ${i + 1}${turn.state === 'running' ? ' (running)' : turn.state === 'cancelled' ? ' (stopped)' : turn.state === 'error' ? ' (failed)' : ''}`);
    for (const entry of turn.entries) blocks.push(entryMarkdown(entry));
  });
  return `${blocks.join('\n\n')}\n`;
}
