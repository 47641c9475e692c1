/** What the answer form shows besides its fields: answers as text, hints, attributes (input-form.ts). */
import type { ChatInputAnswer, ChatInputQuestion } from '../shared/protocol/state.js';

export type Q = ChatInputQuestion & Record<string, unknown>;
export interface Option {
  id: string;
  label: string;
  description?: string;
  recommended?: boolean;
}

/** An answer as the resolved record shows it. */
export function answerText(answer: ChatInputAnswer | undefined, question?: Q): string {
  if (!answer) return '—';
  if (answer.state === 'skipped') return 'skipped';
  const v = answer.value as { kind: string; value?: unknown; freeformValues?: string[] };
  const label = (id: unknown): string => (question?.['options'] as Option[] | undefined)?.find((o) => o.id === id)?.label ?? String(id);
  let text: string;
  if (v.kind === 'selected-many' && Array.isArray(v.value)) text = v.value.map(label).join(', ');
  else if (v.kind === 'selected') text = label(v.value);
  else if (v.kind === 'boolean') text = v.value ? 'Yes' : 'No';
  else text = String(v.value ?? '');
  const free = v.freeformValues?.filter((f) => !(v.kind === 'selected' && f === v.value));
  if (free && free.length > 0) text += `${text ? ', ' : ''}${free.join(', ')}`;
  return text || '—';
}

/** What carries a question's description: its choice group, or its one input. */
export function describedControls(wrap: HTMLElement): HTMLElement[] {
  const group = wrap.querySelector<HTMLElement>('[role=radiogroup], [role=group]');
  if (group) return [group];
  return [...wrap.querySelectorAll<HTMLElement>('input, textarea')];
}

export function numAttr(v: unknown): string | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? String(v) : undefined;
}

export function rangeHint(min: unknown, max: unknown, unit: string): string {
  const lo = typeof min === 'number' ? min : undefined;
  const hi = typeof max === 'number' ? max : undefined;
  if (lo !== undefined && hi !== undefined) return `${lo}–${hi} ${unit}`;
  const numeric = unit === 'number' || unit === 'whole number';
  if (lo !== undefined) return numeric ? `a ${unit}, ${lo} or more` : `at least ${lo} ${unit}`;
  if (hi !== undefined) return numeric ? `a ${unit}, ${hi} or less` : `at most ${hi} ${unit}`;
  return numeric ? `a ${unit}` : '';
}
