/**
 * Hub questions as ACP elicitation forms, and the editor's form content back as AHP answers (the
 * editor bridge's half of the mapping; bridge.ts asks and dispatches).
 */
import type * as acp from '@agentclientprotocol/sdk';
import type { ChatInputAnswer, ChatInputQuestion } from '../../shared/protocol/state.js';

/** AHP questions → an elicitation form schema (the reverse of the provider's mapping). */
export function schemaOf(questions: readonly ChatInputQuestion[]): acp.ElicitationSchema {
  const properties: Record<string, acp.ElicitationPropertySchema> = {};
  const required: string[] = [];
  for (const q of questions) {
    const base: Record<string, unknown> = { description: q.message };
    if (typeof q['title'] === 'string') base['title'] = q['title'];
    if (q.required) required.push(q.id);
    const x = q as Record<string, unknown>;
    const options = (x['options'] as Array<{ id: string; label: string }> | undefined) ?? [];
    switch (q.kind) {
      case 'text':
        properties[q.id] = {
          ...base,
          type: 'string',
          ...(x['min'] !== undefined && { minLength: x['min'] }),
          ...(x['max'] !== undefined && { maxLength: x['max'] }),
          ...(x['format'] !== undefined && { format: x['format'] }),
          ...(x['defaultValue'] !== undefined && { default: x['defaultValue'] }),
        } as acp.ElicitationPropertySchema;
        break;
      case 'number':
      case 'integer':
        properties[q.id] = {
          ...base,
          type: q.kind,
          ...(x['min'] !== undefined && { minimum: x['min'] }),
          ...(x['max'] !== undefined && { maximum: x['max'] }),
          ...(x['defaultValue'] !== undefined && { default: x['defaultValue'] }),
        } as acp.ElicitationPropertySchema;
        break;
      case 'boolean':
        properties[q.id] = { ...base, type: 'boolean', ...(x['defaultValue'] !== undefined && { default: x['defaultValue'] }) } as acp.ElicitationPropertySchema;
        break;
      case 'single-select':
        properties[q.id] = { ...base, type: 'string', oneOf: options.map((o) => ({ const: o.id, title: o.label })) } as acp.ElicitationPropertySchema;
        break;
      case 'multi-select':
        properties[q.id] = {
          ...base,
          type: 'array',
          items: { anyOf: options.map((o) => ({ const: o.id, title: o.label })) },
          ...(x['min'] !== undefined && { minItems: x['min'] }),
          ...(x['max'] !== undefined && { maxItems: x['max'] }),
        } as acp.ElicitationPropertySchema;
        break;
      default:
        properties[q.id] = { ...base, type: 'string' } as acp.ElicitationPropertySchema;
    }
  }
  return { type: 'object', properties, ...(required.length > 0 && { required }) };
}

/** Elicitation content → submitted AHP answers by question kind (values that do not fit are left out). */
export function answersOf(questions: readonly ChatInputQuestion[], content: Record<string, unknown>): Record<string, ChatInputAnswer> {
  const answers: Record<string, ChatInputAnswer> = {};
  for (const q of questions) {
    const v = content[q.id];
    if (v === undefined) continue;
    let value: unknown;
    if (q.kind === 'text' && typeof v === 'string') value = { kind: 'text', value: v };
    else if ((q.kind === 'number' || q.kind === 'integer') && typeof v === 'number') value = { kind: 'number', value: v };
    else if (q.kind === 'boolean' && typeof v === 'boolean') value = { kind: 'boolean', value: v };
    else if (q.kind === 'single-select' && typeof v === 'string') value = { kind: 'selected', value: v };
    else if (q.kind === 'multi-select' && Array.isArray(v)) value = { kind: 'selected-many', value: v.filter((s) => typeof s === 'string') };
    if (value !== undefined) answers[q.id] = { state: 'submitted', value } as ChatInputAnswer;
  }
  return answers;
}
