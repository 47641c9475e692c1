/**
 * Pure translations between ACP values and AHP values: content blocks to markdown, tool content,
 * plans, permission options, elicitation schemas to questions and answers back, stop reasons.
 * Everything an agent sends is bounded here before it reaches the hub.
 */
import type * as acp from '@agentclientprotocol/sdk';
import type { ChatInputAnswer, ChatInputQuestion, ConfirmationOption, ToolContent } from '../../shared/protocol/state.js';
import { StateLimits } from '../../shared/protocol/state.js';

/** Longest text the hub keeps from one agent value (the AHP text limit). */
export const MAX_TEXT: number = StateLimits.text;
/** Most questions / options / content blocks / locations taken from one agent value. */
const MAX_ITEMS = 50;

export function clip(text: string, max = MAX_TEXT): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** An ACP content block as markdown text (non-text blocks become a short readable mention). */
export function contentBlockText(block: acp.ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
      return `[image ${block.mimeType}]`;
    case 'audio':
      return `[audio ${block.mimeType}]`;
    case 'resource_link':
      return `[${block.title ?? block.name}](${block.uri})`;
    case 'resource': {
      const r = block.resource as { uri: string; text?: string };
      return typeof r.text === 'string' ? `\n\`${r.uri}\`:\n\n${r.text}\n` : `[${r.uri}]`;
    }
    default:
      return '';
  }
}

/** ACP tool-call content → AHP tool content blocks (`text`; diffs keep their structure in `_meta`). */
export function toolContent(content: readonly acp.ToolCallContent[] | null | undefined): ToolContent {
  const out: ToolContent = [];
  for (const item of (content ?? []).slice(0, MAX_ITEMS)) {
    if (item.type === 'content') {
      out.push({ type: 'text', text: clip(contentBlockText(item.content)) });
    } else if (item.type === 'diff') {
      const diff = { path: item.path, oldText: item.oldText ?? null, newText: item.newText };
      out.push({ type: 'text', text: clip(renderDiff(diff)), _meta: { 'acp/diff': { path: diff.path, oldText: clip(diff.oldText ?? ''), newText: clip(diff.newText) } } });
    } else if (item.type === 'terminal') {
      out.push({ type: 'text', text: `[terminal ${item.terminalId}]` });
    }
  }
  return out;
}

function renderDiff(diff: { path: string; oldText: string | null; newText: string }): string {
  const lines = ['```diff', `--- ${diff.oldText === null ? '/dev/null' : diff.path}`, `+++ ${diff.path}`];
  if (diff.oldText) for (const l of diff.oldText.split('\n')) lines.push(`-${l}`);
  for (const l of diff.newText.split('\n')) lines.push(`+${l}`);
  lines.push('```');
  return lines.join('\n');
}

export function toolLocations(locations: readonly acp.ToolCallLocation[] | null | undefined): Array<{ path: string; line?: number }> {
  return (locations ?? []).slice(0, MAX_ITEMS).map((l) => (typeof l.line === 'number' ? { path: clip(l.path, 4096), line: l.line } : { path: clip(l.path, 4096) }));
}

/** JSON of a tool's raw input, as the AHP `toolInput` string. */
export function toolInputText(rawInput: unknown): string | undefined {
  if (rawInput === undefined || rawInput === null) return undefined;
  if (typeof rawInput === 'object' && Object.keys(rawInput).length === 0) return undefined;
  try {
    return clip(typeof rawInput === 'string' ? rawInput : JSON.stringify(rawInput));
  } catch {
    return undefined;
  }
}

const PLAN_MARK: Record<string, string> = { completed: '[x]', in_progress: '[~]', pending: '[ ]' };

/** A plan as a markdown checklist: `- [x] done`, `- [~] in progress`, `- [ ] pending`. */
export function planMarkdown(plan: acp.Plan): string {
  const lines = ['**Plan**', ''];
  for (const e of plan.entries.slice(0, MAX_ITEMS)) {
    const priority = e.priority === 'high' ? ' *(high priority)*' : '';
    lines.push(`- ${PLAN_MARK[e.status] ?? '[ ]'} ${clip(e.content.replace(/\s+/g, ' '), 2_000)}${priority}`);
  }
  return lines.join('\n');
}

/** Key under which an AHP confirmation option keeps the agent's own ACP option kind. */
export const ACP_OPTION_KIND = 'acp/optionKind';

const ACP_OPTION_KINDS: ReadonlySet<unknown> = new Set<acp.PermissionOptionKind>(['allow_once', 'allow_always', 'reject_once', 'reject_always']);

/** Whether a value is one of ACP's four permission option kinds. */
export function isAcpOptionKind(value: unknown): value is acp.PermissionOptionKind {
  return ACP_OPTION_KINDS.has(value);
}

/**
 * The ACP kind of an AHP confirmation option: the agent's own kind when one was relayed in
 * `_meta` (and `relayed` accepts it), else `allow_once` for `approve` and `reject_once` otherwise.
 */
export function acpOptionKind(option: ConfirmationOption, relayed: (kind: unknown) => boolean = isAcpOptionKind): acp.PermissionOptionKind {
  const kind = (option as { _meta?: Record<string, unknown> })._meta?.[ACP_OPTION_KIND];
  return relayed(kind) ? (kind as acp.PermissionOptionKind) : option.kind === 'approve' ? 'allow_once' : 'reject_once';
}

/** The agent's permission options as AHP confirmation options (same ids, labels; kind kept in `_meta`). */
export function confirmationOptions(options: readonly acp.PermissionOption[]): ConfirmationOption[] {
  return options.slice(0, MAX_ITEMS).map((o) => ({
    id: o.optionId,
    label: clip(o.name || o.optionId, 256),
    kind: o.kind === 'allow_once' || o.kind === 'allow_always' ? 'approve' : 'deny',
    _meta: { [ACP_OPTION_KIND]: o.kind },
  }));
}

/**
 * What an AHP tool decision means for an ACP permission request with these options: the selected
 * option when it is one of them; a denial picks a reject option, any other cancellation is
 * `cancelled`; an approval picks allow_always when confirmed by a setting, else allow_once.
 * Used for the hub's hosted ACP agents and for the interactions registry's ACP/Qwen surfaces.
 */
export function permissionOutcome(
  options: readonly Pick<acp.PermissionOption, 'optionId' | 'kind'>[],
  decided: { status: string; selectedOption?: { id: string } | undefined; confirmed?: string; reason?: string },
): acp.RequestPermissionOutcome {
  const byKind = (...kinds: acp.PermissionOptionKind[]): Pick<acp.PermissionOption, 'optionId' | 'kind'> | undefined => {
    for (const k of kinds) {
      const o = options.find((x) => x.kind === k);
      if (o) return o;
    }
    return undefined;
  };
  const chosen = decided.selectedOption ? options.find((o) => o.optionId === decided.selectedOption!.id) : undefined;
  if (chosen) return { outcome: 'selected', optionId: chosen.optionId };
  if (decided.status === 'cancelled') {
    if (decided.reason !== 'denied') return { outcome: 'cancelled' };
    const reject = byKind('reject_once', 'reject_always');
    return reject ? { outcome: 'selected', optionId: reject.optionId } : { outcome: 'cancelled' };
  }
  const allow = decided.confirmed === 'setting' ? byKind('allow_always', 'allow_once') : byKind('allow_once', 'allow_always');
  return allow ? { outcome: 'selected', optionId: allow.optionId } : { outcome: 'cancelled' };
}

// ─── Elicitation ─────────────────────────────────────────────────────────────

type Property = Record<string, unknown>;

function str(v: unknown, max = 256): string | undefined {
  return typeof v === 'string' && v.length > 0 ? clip(v, max) : undefined;
}
function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
function nonNegInt(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}
function defined<T extends Record<string, unknown>>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

function enumOptions(p: Property): Array<{ id: string; label: string; description?: string }> | undefined {
  if (Array.isArray(p['oneOf'])) {
    return (p['oneOf'] as Array<Record<string, unknown>>)
      .filter((o) => typeof o?.['const'] === 'string')
      .slice(0, MAX_ITEMS)
      .map((o) => defined({ id: clip(String(o['const']), 256), label: str(o['title']) ?? clip(String(o['const']), 256), description: str(o['description'], 2_000) }));
  }
  if (Array.isArray(p['enum'])) {
    return (p['enum'] as unknown[])
      .filter((v): v is string => typeof v === 'string')
      .slice(0, MAX_ITEMS)
      .map((v) => ({ id: clip(v, 256), label: clip(v, 256) }));
  }
  return undefined;
}

/** A form elicitation's JSON schema → AHP questions (`undefined` when it has too many to show). */
export function questionsFromSchema(schema: acp.ElicitationSchema): ChatInputQuestion[] | undefined {
  const properties = Object.entries(schema.properties ?? {});
  if (properties.length > MAX_ITEMS) return undefined;
  const required = new Set(schema.required ?? []);
  return properties.map(([key, raw]): ChatInputQuestion => {
    const p = raw as Property;
    const base = defined({
      id: key,
      title: str(p['title']),
      message: clip(str(p['description'], MAX_TEXT) ?? str(p['title'], MAX_TEXT) ?? key),
      required: required.has(key) ? true : undefined,
    });
    switch (p['type']) {
      case 'string': {
        const options = enumOptions(p);
        if (options) return { ...base, kind: 'single-select', options: options.map((o) => (o.id === p['default'] ? { ...o, recommended: true } : o)) };
        return defined({ ...base, kind: 'text' as const, format: str(p['format'], 64), min: nonNegInt(p['minLength']), max: nonNegInt(p['maxLength']), defaultValue: str(p['default'], MAX_TEXT) });
      }
      case 'number':
      case 'integer':
        return defined({ ...base, kind: p['type'], min: num(p['minimum']), max: num(p['maximum']), defaultValue: num(p['default']) });
      case 'boolean':
        return defined({ ...base, kind: 'boolean' as const, defaultValue: typeof p['default'] === 'boolean' ? p['default'] : undefined });
      case 'array': {
        const items = (p['items'] ?? {}) as Property;
        const options = Array.isArray(items['anyOf']) ? enumOptions({ oneOf: items['anyOf'] }) : enumOptions(items);
        return defined({ ...base, kind: 'multi-select' as const, options: options ?? [], min: nonNegInt(p['minItems']), max: nonNegInt(p['maxItems']) });
      }
      default:
        return { ...base, kind: 'text' };
    }
  });
}

/** Submitted AHP answers → the elicitation's `content` (skipped and unknown answers are left out). */
export function elicitationContent(questions: readonly ChatInputQuestion[], answers: Readonly<Record<string, ChatInputAnswer>>): Record<string, acp.ElicitationContentValue> {
  const content: Record<string, acp.ElicitationContentValue> = {};
  for (const q of questions) {
    const answer = answers[q.id];
    if (answer?.state !== 'submitted' || !answer.value) continue;
    const v = answer.value as { kind: string; value?: unknown; freeformValues?: string[] };
    if (v.kind === 'text' && typeof v.value === 'string') content[q.id] = v.value;
    else if (v.kind === 'number' && typeof v.value === 'number') content[q.id] = v.value;
    else if (v.kind === 'boolean' && typeof v.value === 'boolean') content[q.id] = v.value;
    else if (v.kind === 'selected' && typeof v.value === 'string') content[q.id] = v.value;
    else if (v.kind === 'selected-many' && Array.isArray(v.value)) content[q.id] = [...(v.value as string[]), ...(v.freeformValues ?? [])];
  }
  return content;
}

// ─── Stop reasons ────────────────────────────────────────────────────────────

/** How a non-`end_turn` stop reason ends the AHP turn (errorType = the stop reason). */
export const STOP_REASON_MESSAGES: Record<string, string> = {
  max_tokens: 'The agent stopped: the model reached its maximum number of tokens (max_tokens).',
  max_turn_requests: 'The agent stopped: it reached its maximum number of model requests for one turn (max_turn_requests).',
  refusal: 'The agent refused to continue (refusal).',
  cancelled: 'The agent cancelled the turn (cancelled).',
};
