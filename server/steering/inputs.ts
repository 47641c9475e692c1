/**
 * The steering input contract shared by every surface (HTTP, WebSocket JSON-RPC, SDK, headless
 * CLI): request validation, content normalisation and the error taxonomy. Pure: no hub, no I/O.
 *
 * Every refusal is an `InputError`: a `ProtocolError` of a kind of the one table (its HTTP status
 * and `code` come from there) carrying the `outcome` the seed names (`closed` for a closed/stale
 * target, `rejected` for everything else); the transports only render it.
 */
import type { InputReceipt, InputReceiptState, InputSource, InputTarget } from '../../shared/protocol/steering.js';
import type { ErrorKind } from '../../shared/protocol/error-kinds.js';
import { ProtocolError } from '../../shared/protocol/errors.js';

export const INPUT_PROTOCOL_VERSION = 1;
/** Longest accepted `inputId` (UTF-16 code units); the pending steering message id embeds it. */
export const MAX_INPUT_ID_LENGTH = 200;
/** Longest accepted normalised text, in UTF-16 code units (the AHP message text limit). */
export const MAX_INPUT_TEXT_LENGTH = 100_000;
export const MAX_BLOCKS = 256;
export const DEFAULT_TURN_QUOTA = 32;

export type { InputReceipt, InputSource, InputTarget };
export type ReceiptState = InputReceiptState;

export interface SubmitRequest {
  readonly inputId: string;
  readonly target: InputTarget;
  /** Normalised text: blocks joined with '\n', CRLF/CR → LF, Unicode NFC. Never trimmed. */
  readonly text: string;
  readonly ack: 'memory';
}

export type InputOutcome = 'closed' | 'rejected';

/**
 * A refusal with the same `code` on every surface: a `ProtocolError` whose `data` is
 * `{...extra, outcome?}`, so its HTTP body is `{...extra, outcome?, code, message}`; the WebSocket
 * sends that body as the JSON-RPC error's `data` (steering/feature.ts).
 */
export class InputError extends ProtocolError {
  constructor(
    kind: ErrorKind,
    readonly outcome: InputOutcome | undefined,
    message: string,
    extra: Readonly<Record<string, unknown>> = {},
  ) {
    super(kind, message, outcome ? { ...extra, outcome } : extra);
    this.name = 'InputError';
  }
}

export const malformed = (message: string): InputError => new InputError('input_malformed', 'rejected', message);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// Control characters other than tab / LF / CR are refused in ids (they end up in URLs and logs).
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

export function parseInputId(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) throw malformed('inputId must be a non-empty string');
  if (value.length > MAX_INPUT_ID_LENGTH) throw malformed(`inputId must be at most ${MAX_INPUT_ID_LENGTH} characters`);
  if (CONTROL.test(value)) throw malformed('inputId must not contain control characters');
  return value;
}

export function parseTarget(value: unknown): InputTarget {
  if (value === null || value === undefined) {
    throw malformed('target is required: {historyEpoch, turnId} from getInputTarget(); when the session is idle start a new turn instead');
  }
  if (!isRecord(value)) throw malformed('target must be an object {historyEpoch, turnId}');
  const { historyEpoch, turnId } = value;
  if (typeof historyEpoch !== 'string' || historyEpoch.length === 0 || historyEpoch.length > 256) {
    throw malformed('target.historyEpoch must be a non-empty string');
  }
  if (typeof turnId !== 'string' || turnId.length === 0 || turnId.length > 256) throw malformed('target.turnId must be a non-empty string');
  return { historyEpoch, turnId };
}

/** CRLF / CR → LF and NFC; the form idempotent retries are compared in. Never trims. */
export function normaliseText(text: string): string {
  return text.replace(/\r\n?/g, '\n').normalize('NFC');
}

/**
 * `{text}` or `{blocks: [{t: 'text', text}, …]}` → the text that enters the turn. Anything that
 * cannot be represented is refused with its own code, never dropped: image blocks
 * (`image_unsupported`), other block kinds or content shapes (`unsupported_content`), empty or
 * whitespace-only text and `blocks: []` (`empty_content`), oversized text (`content_too_large`).
 * Wrong JSON types are malformed (400).
 */
export function parseContent(value: unknown): string {
  if (!isRecord(value)) throw malformed('content must be an object: {text} or {blocks: [{t: "text", text}]}');
  const keys = Object.keys(value);
  const hasText = 'text' in value;
  const hasBlocks = 'blocks' in value;
  const unknownKeys = keys.filter((k) => k !== 'text' && k !== 'blocks');
  if (unknownKeys.length > 0 || (hasText && hasBlocks) || (!hasText && !hasBlocks)) {
    const image = unknownKeys.some((k) => /image/i.test(k));
    throw new InputError(
      image ? 'image_unsupported' : 'unsupported_content',
      'rejected',
      image ? 'images are not supported (image: false); send text only' : `unsupported content ${JSON.stringify(keys)}: send exactly one of {text} or {blocks}`,
    );
  }
  let joined: string;
  if (hasText) {
    if (typeof value['text'] !== 'string') throw malformed('content.text must be a string');
    joined = value['text'];
  } else {
    const blocks = value['blocks'];
    if (!Array.isArray(blocks)) throw malformed('content.blocks must be an array');
    if (blocks.length === 0) throw new InputError('empty_content', 'rejected', 'content.blocks is empty; nothing would be added');
    if (blocks.length > MAX_BLOCKS) throw new InputError('content_too_large', 'rejected', `at most ${MAX_BLOCKS} blocks`);
    const texts: string[] = [];
    for (const [i, block] of blocks.entries()) {
      if (!isRecord(block) || typeof block['t'] !== 'string') throw malformed(`content.blocks.${i} must be an object with a string "t"`);
      if (block['t'] === 'image') throw new InputError('image_unsupported', 'rejected', `content.blocks.${i} is an image; images are not supported (image: false)`);
      if (block['t'] !== 'text') throw new InputError('unsupported_content', 'rejected', `content.blocks.${i} has unsupported kind ${JSON.stringify(block['t'])}`);
      if (typeof block['text'] !== 'string') throw malformed(`content.blocks.${i}.text must be a string`);
      const extra = Object.keys(block).filter((k) => k !== 't' && k !== 'text');
      if (extra.length > 0) throw new InputError('unsupported_content', 'rejected', `content.blocks.${i} has unsupported fields ${JSON.stringify(extra)}`);
      texts.push(block['text']);
    }
    joined = texts.join('\n');
  }
  const text = normaliseText(joined);
  if (text.trim() === '') throw new InputError('empty_content', 'rejected', 'the text is empty or whitespace only; nothing would be added');
  if (text.length > MAX_INPUT_TEXT_LENGTH) {
    throw new InputError('content_too_large', 'rejected', `the text is longer than ${MAX_INPUT_TEXT_LENGTH} characters`);
  }
  return text;
}

export function parseAck(value: unknown): 'memory' {
  if (value === undefined || value === 'memory') return 'memory';
  if (value === 'durable') {
    throw new InputError('durable_ack_unsupported', 'rejected', "ack 'durable' is not supported (durableAck: false); omit ack or send 'memory'");
  }
  if (typeof value === 'string') throw new InputError('unsupported_ack', 'rejected', `ack ${JSON.stringify(value)} is not supported; use 'memory'`);
  throw malformed("ack must be the string 'memory' when present");
}

/** Validates a submit body (HTTP body or JSON-RPC params). Order: shape (400) → ack → content (422). */
export function parseSubmit(body: unknown): SubmitRequest {
  if (!isRecord(body)) throw malformed('the body must be a JSON object {inputId, target, content, ack?}');
  const inputId = parseInputId(body['inputId']);
  const target = parseTarget(body['target']);
  if (body['content'] === undefined) throw malformed('content is required: {text} or {blocks}');
  if (body['ack'] !== undefined && typeof body['ack'] !== 'string') throw malformed("ack must be the string 'memory' when present");
  const ack = parseAck(body['ack']);
  const text = parseContent(body['content']);
  return { inputId, target, text, ack };
}

/** Validates a status query (`inputId` + target). */
export function parseStatusQuery(inputId: unknown, target: unknown): { inputId: string; target: InputTarget } {
  return { inputId: parseInputId(inputId), target: parseTarget(target) };
}
