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
import { HttpError } from '../transport/http-error.js';
import { ERROR_TABLE } from '../../shared/protocol/error-kinds.js';

/** Stable business error codes (`ErrorCode`) with their JSON-RPC codes. */
export const REPLY_ERRORS = {
  INVALID_JSON: -32700,
  INVALID_REQUEST: -32600,
  MISSING_ID: -32600,
  MISSING_PARAMS: -32602,
  INVALID_SESSION_ID: -32602,
  INVALID_PERMISSION_REQUEST_ID: -32602,
  MISSING_OUTCOME: -32602,
  INVALID_OUTCOME: -32602,
  MISSING_OPTION_ID: -32602,
  INVALID_OPTION_ID: -32602,
  INVALID_ANSWERS: -32602,
  INVALID_ANSWER_KEY: -32602,
  INVALID_ANSWER: -32602,
  MISSING_REQUIRED_ANSWER: -32602,
  ANSWERS_NOT_EXPECTED: -32602,
  PERMISSION_DENIED: ERROR_TABLE.permission_denied.rpc,
  DAEMON_PERMISSION_UNAVAILABLE: -32601,
  INTERNAL_ERROR: -32603,
} as const satisfies Record<string, number>;
export type ReplyErrorName = keyof typeof REPLY_ERRORS;

export interface ParamError {
  readonly errorCode: ReplyErrorName;
  readonly message: string;
}

/**
 * The HTTP status of a reply error, on every reply route (the DataWorks envelope's status and
 * the Qwen-style routes' status): refused permission 403, replies switched off 501, the hub
 * unable to apply 503, anything wrong with the request 400.
 */
export function replyErrorStatus(code: ReplyErrorName): number {
  switch (code) {
    case 'PERMISSION_DENIED':
      return ERROR_TABLE.permission_denied.http;
    case 'DAEMON_PERMISSION_UNAVAILABLE':
      return 501;
    case 'INTERNAL_ERROR':
      return 503;
    default:
      return 400;
  }
}

/**
 * An HTTP error in qwen serve's style: the message is also in `error`, the field qwen's own
 * client reads (`extra` fields come before it).
 */
export function qwenHttpError(status: number, code: string, message: string, extra: Readonly<Record<string, unknown>> = {}): HttpError {
  return new HttpError(status, code, message, { ...extra, error: message });
}

/** A reply error as a Qwen-style HTTP error, with the lower-cased name as `code` (`invalid_option_id`). */
export function replyHttpError(e: ParamError, extra: Readonly<Record<string, unknown>> = {}): HttpError {
  return qwenHttpError(replyErrorStatus(e.errorCode), e.errorCode.toLowerCase(), e.message, extra);
}

const MAX_ID = 256;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `.`/`..` would be dot-segments in `/session/:id/permission/:requestId` and change the route. */
export function checkPermissionRequestId(value: unknown, field: string): ParamError | undefined {
  if (typeof value !== 'string' || value === '') return { errorCode: 'INVALID_PERMISSION_REQUEST_ID', message: `${field} is required: the params.data.requestId of a permission_request event` };
  if (value === '.' || value === '..') return { errorCode: 'INVALID_PERMISSION_REQUEST_ID', message: `${field} may not be "." or ".."` };
  if (value.length > MAX_ID) return { errorCode: 'INVALID_PERMISSION_REQUEST_ID', message: `${field} is longer than ${MAX_ID} characters` };
  return undefined;
}

/** Outcome + answers, shared by both shapes (`names` are the shape's field names). */
export function parseReplyBody(outcomeObj: unknown, answers: unknown, names: { outcome: string; kind: string; optionId: string; answers: string }): Reply | ParamError {
  if (!isObject(outcomeObj)) return { errorCode: 'MISSING_OUTCOME', message: `${names.outcome} is required: {"${names.kind}": "selected", "${names.optionId}": ...} or {"${names.kind}": "cancelled"}` };
  const kind = outcomeObj[names.kind];
  if (kind !== 'selected' && kind !== 'cancelled') {
    return { errorCode: 'INVALID_OUTCOME', message: `${names.outcome}.${names.kind} must be "selected" or "cancelled"${kind === undefined ? '' : `, not ${JSON.stringify(kind).slice(0, 60)}`}` };
  }
  let parsedAnswers: Record<string, string> | undefined;
  if (answers !== undefined && answers !== null) {
    if (!isObject(answers)) return { errorCode: 'INVALID_ANSWERS', message: `${names.answers} must be an object of question index → answer text, e.g. {"0": "..."}` };
    const entries = Object.entries(answers);
    if (entries.length > MAX_ANSWER_KEYS) return { errorCode: 'INVALID_ANSWERS', message: `${names.answers} has more than ${MAX_ANSWER_KEYS} entries` };
    parsedAnswers = {};
    for (const [key, value] of entries) {
      if (!isCanonicalIndexKey(key)) {
        return { errorCode: 'INVALID_ANSWER_KEY', message: `${names.answers} key ${JSON.stringify(key)} is not a question index: use "0", "1", ... (no leading zeros, signs or decimals)` };
      }
      if (typeof value !== 'string') return { errorCode: 'INVALID_ANSWERS', message: `${names.answers}["${key}"] must be a string` };
      if (value.length > MAX_ANSWER_LENGTH) return { errorCode: 'INVALID_ANSWERS', message: `${names.answers}["${key}"] is longer than ${MAX_ANSWER_LENGTH} characters` };
      parsedAnswers[key] = value;
    }
  }
  if (kind === 'cancelled') return { outcome: { outcome: 'cancelled' } };
  const optionId = outcomeObj[names.optionId];
  if (typeof optionId !== 'string' || optionId === '') {
    return { errorCode: 'MISSING_OPTION_ID', message: `${names.outcome}.${names.optionId} is required and may not be empty when ${names.kind} is "selected": use an optionId from the permission_request options` };
  }
  if (optionId.length > MAX_ID) return { errorCode: 'INVALID_OPTION_ID', message: `${names.outcome}.${names.optionId} is longer than ${MAX_ID} characters` };
  return parsedAnswers ? { outcome: { outcome: 'selected', optionId }, answers: parsedAnswers } : { outcome: { outcome: 'selected', optionId } };
}

export function isParamError(v: Reply | ParamError | object): v is ParamError {
  return 'errorCode' in v;
}

export interface DataWorksReply {
  readonly sessionId: string;
  readonly permissionRequestId: string;
  readonly reply: Reply;
}

/** Checks a DataWorks envelope. `id` is what to echo (the given `Id` when it is a string or number). */
export function parseDataWorks(body: unknown): { id: string | number | null; parsed: DataWorksReply | ParamError } {
  if (!isObject(body)) return { id: null, parsed: { errorCode: 'INVALID_REQUEST', message: 'the body must be a JSON object {"Id", "Params"}' } };
  const rawId = body['Id'];
  const id = typeof rawId === 'string' || typeof rawId === 'number' ? rawId : null;
  if (body['Jsonrpc'] !== undefined && body['Jsonrpc'] !== '2.0') return { id, parsed: { errorCode: 'INVALID_REQUEST', message: 'Jsonrpc must be "2.0" when given' } };
  if (typeof rawId !== 'string' || rawId === '' || rawId.length > MAX_ID) {
    return { id, parsed: { errorCode: 'MISSING_ID', message: `Id is required: a non-empty string of at most ${MAX_ID} characters, echoed in the response` } };
  }
  const params = body['Params'];
  if (!isObject(params)) return { id, parsed: { errorCode: 'MISSING_PARAMS', message: 'Params is required: {"SessionId", "PermissionRequestId", "Outcome", "Answers"?}' } };
  const sessionId = params['SessionId'];
  if (typeof sessionId !== 'string' || sessionId === '' || sessionId.length > 512) {
    return { id, parsed: { errorCode: 'INVALID_SESSION_ID', message: 'Params.SessionId is required: the id returned when the session was created' } };
  }
  const badRequestId = checkPermissionRequestId(params['PermissionRequestId'], 'Params.PermissionRequestId');
  if (badRequestId) return { id, parsed: badRequestId };
  const reply = parseReplyBody(params['Outcome'], params['Answers'], { outcome: 'Params.Outcome', kind: 'Outcome', optionId: 'OptionId', answers: 'Params.Answers' });
  if (isParamError(reply)) return { id, parsed: reply };
  return { id, parsed: { sessionId, permissionRequestId: params['PermissionRequestId'] as string, reply } };
}

/** Checks a Qwen body (`requestId` comes from the path). */
export function parseQwen(body: unknown): Reply | ParamError {
  if (!isObject(body)) return { errorCode: 'INVALID_REQUEST', message: 'the body must be a JSON object {"outcome": {...}}' };
  return parseReplyBody(body['outcome'], body['answers'], { outcome: 'outcome', kind: 'outcome', optionId: 'optionId', answers: 'answers' });
}
