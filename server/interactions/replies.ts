/**
 * The two reply wire shapes and their parameter checks, done before any lookup so a malformed
 * reply is an error even for an unknown request id.
 *
 * DataWorks `ReplyAgentSession`:
 *   POST /v2/agent-sessions/reply
 *   {"Jsonrpc"?: "2.0", "Id": string, "Params": {"SessionId", "PermissionRequestId",
 *    "Answers"?: {"0": "..."}, "Outcome": {"Outcome": "selected"|"cancelled", "OptionId"?}}}
 *   → {"JsonRpcResponse": {"Id", "Jsonrpc": "2.0", "Result": {"Accepted"}} | ... "Error": {...},
 *      "Timestamp"}, "RequestId"}   (exactly one of Result / Error)
 * Qwen `qwen serve`:
 *   POST /session/{sessionId}/permission/{requestId}
 *   {"outcome": {"outcome": "selected", "optionId"} | {"outcome": "cancelled"}, "answers"?}
 *   → 200 taken · 404 unknown / already resolved / expired / no such session · 400 bad params
 */
import { isCanonicalIndexKey, MAX_ANSWER_KEYS, MAX_ANSWER_LENGTH } from './answers.js';
import type { Reply } from './interaction-model.js';
import { dataWorksCode, dataWorksKindOf, rpcCodeOf, type ErrorKind } from '../../shared/protocol/error-kinds.js';
import { ProtocolError } from '../../shared/protocol/errors.js';

/**
 * A reply the checks refuse: a kind of the one table (shared/protocol/error-kinds.ts), whose
 * DataWorks name is the kind in UPPER_SNAKE (`missing_option_id` → `MISSING_OPTION_ID`) and whose
 * statuses and JSON-RPC codes come from there.
 */
export interface ParamError {
  readonly kind: ErrorKind;
  readonly message: string;
}

/** The DataWorks envelope's `Error` for a refusal: the JSON-RPC code and the UPPER_SNAKE name of the kind it shows as. */
export function dataWorksError(e: ParamError): { Code: number; ErrorCode: string; Message: string; Data: Record<string, never> } {
  return { Code: rpcCodeOf(dataWorksKindOf(e.kind)), ErrorCode: dataWorksCode(e.kind), Message: e.message, Data: {} };
}

/**
 * An error in qwen serve's style: the message is also in `error`, the field qwen's own client
 * reads (`extra` fields come before it).
 */
export function qwenError(kind: ErrorKind, message: string, extra: Readonly<Record<string, unknown>> = {}): ProtocolError {
  return new ProtocolError(kind, message, { ...extra, error: message });
}

/** A reply refusal as a Qwen-style error: its `code` is the kind's (`invalid_option_id`). */
export function replyHttpError(e: ParamError, extra: Readonly<Record<string, unknown>> = {}): ProtocolError {
  return qwenError(e.kind, e.message, extra);
}

const MAX_ID = 256;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `.`/`..` would be dot-segments in `/session/:id/permission/:requestId` and change the route. */
export function checkPermissionRequestId(value: unknown, field: string): ParamError | undefined {
  if (typeof value !== 'string' || value === '') return { kind: 'invalid_permission_request_id', message: `${field} is required: the params.data.requestId of a permission_request event` };
  if (value === '.' || value === '..') return { kind: 'invalid_permission_request_id', message: `${field} may not be "." or ".."` };
  if (value.length > MAX_ID) return { kind: 'invalid_permission_request_id', message: `${field} is longer than ${MAX_ID} characters` };
  return undefined;
}

/** Outcome + answers, shared by both shapes (`names` are the shape's field names). */
export function parseReplyBody(outcomeObj: unknown, answers: unknown, names: { outcome: string; kind: string; optionId: string; answers: string }): Reply | ParamError {
  if (!isObject(outcomeObj)) return { kind: 'missing_outcome', message: `${names.outcome} is required: {"${names.kind}": "selected", "${names.optionId}": ...} or {"${names.kind}": "cancelled"}` };
  const kind = outcomeObj[names.kind];
  if (kind !== 'selected' && kind !== 'cancelled') {
    return { kind: 'invalid_outcome', message: `${names.outcome}.${names.kind} must be "selected" or "cancelled"${kind === undefined ? '' : `, not ${JSON.stringify(kind).slice(0, 60)}`}` };
  }
  let parsedAnswers: Record<string, string> | undefined;
  if (answers !== undefined && answers !== null) {
    if (!isObject(answers)) return { kind: 'invalid_answers', message: `${names.answers} must be an object of question index → answer text, e.g. {"0": "..."}` };
    const entries = Object.entries(answers);
    if (entries.length > MAX_ANSWER_KEYS) return { kind: 'invalid_answers', message: `${names.answers} has more than ${MAX_ANSWER_KEYS} entries` };
    parsedAnswers = {};
    for (const [key, value] of entries) {
      if (!isCanonicalIndexKey(key)) {
        return { kind: 'invalid_answer_key', message: `${names.answers} key ${JSON.stringify(key)} is not a question index: use "0", "1", ... (no leading zeros, signs or decimals)` };
      }
      if (typeof value !== 'string') return { kind: 'invalid_answers', message: `${names.answers}["${key}"] must be a string` };
      if (value.length > MAX_ANSWER_LENGTH) return { kind: 'invalid_answers', message: `${names.answers}["${key}"] is longer than ${MAX_ANSWER_LENGTH} characters` };
      parsedAnswers[key] = value;
    }
  }
  if (kind === 'cancelled') return { outcome: { outcome: 'cancelled' } };
  const optionId = outcomeObj[names.optionId];
  if (typeof optionId !== 'string' || optionId === '') {
    return { kind: 'missing_option_id', message: `${names.outcome}.${names.optionId} is required and may not be empty when ${names.kind} is "selected": use an optionId from the permission_request options` };
  }
  if (optionId.length > MAX_ID) return { kind: 'invalid_option_id', message: `${names.outcome}.${names.optionId} is longer than ${MAX_ID} characters` };
  return parsedAnswers ? { outcome: { outcome: 'selected', optionId }, answers: parsedAnswers } : { outcome: { outcome: 'selected', optionId } };
}

export function isParamError(v: Reply | ParamError | object): v is ParamError {
  return 'kind' in v;
}

export interface DataWorksReply {
  readonly sessionId: string;
  readonly permissionRequestId: string;
  readonly reply: Reply;
}

/** Checks a DataWorks envelope. `id` is what to echo (the given `Id` when it is a string or number). */
export function parseDataWorks(body: unknown): { id: string | number | null; parsed: DataWorksReply | ParamError } {
  if (!isObject(body)) return { id: null, parsed: { kind: 'invalid_request', message: 'the body must be a JSON object {"Id", "Params"}' } };
  const rawId = body['Id'];
  const id = typeof rawId === 'string' || typeof rawId === 'number' ? rawId : null;
  if (body['Jsonrpc'] !== undefined && body['Jsonrpc'] !== '2.0') return { id, parsed: { kind: 'invalid_request', message: 'Jsonrpc must be "2.0" when given' } };
  if (typeof rawId !== 'string' || rawId === '' || rawId.length > MAX_ID) {
    return { id, parsed: { kind: 'missing_id', message: `Id is required: a non-empty string of at most ${MAX_ID} characters, echoed in the response` } };
  }
  const params = body['Params'];
  if (!isObject(params)) return { id, parsed: { kind: 'missing_params', message: 'Params is required: {"SessionId", "PermissionRequestId", "Outcome", "Answers"?}' } };
  const sessionId = params['SessionId'];
  if (typeof sessionId !== 'string' || sessionId === '' || sessionId.length > 512) {
    return { id, parsed: { kind: 'invalid_session_id', message: 'Params.SessionId is required: the id returned when the session was created' } };
  }
  const badRequestId = checkPermissionRequestId(params['PermissionRequestId'], 'Params.PermissionRequestId');
  if (badRequestId) return { id, parsed: badRequestId };
  const reply = parseReplyBody(params['Outcome'], params['Answers'], { outcome: 'Params.Outcome', kind: 'Outcome', optionId: 'OptionId', answers: 'Params.Answers' });
  if (isParamError(reply)) return { id, parsed: reply };
  return { id, parsed: { sessionId, permissionRequestId: params['PermissionRequestId'] as string, reply } };
}

/** Checks a Qwen body (`requestId` comes from the path). */
export function parseQwen(body: unknown): Reply | ParamError {
  if (!isObject(body)) return { kind: 'invalid_request', message: 'the body must be a JSON object {"outcome": {...}}' };
  return parseReplyBody(body['outcome'], body['answers'], { outcome: 'outcome', kind: 'outcome', optionId: 'optionId', answers: 'answers' });
}
