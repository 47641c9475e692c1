/**
 * Validation of headless control frames (one JSON object per stdin line):
 *   {"v":1,"id":"a","method":"steer","params":{inputId, target, content, ack?}}
 *   {"v":1,"id":"b","method":"input_status","params":{inputId, target}}
 *   {"v":1,"id":"c","method":"cancel"}
 * A bad frame is answered with an explicit rejection (`outcome: 'rejected'` + `code`), echoing
 * the frame id when one could be read. There is no "start" frame: one `-p` is one query.
 */
export type FrameId = string | number;

export type ControlFrame =
  | { readonly v: 1; readonly id: FrameId; readonly method: 'steer'; readonly params: Record<string, unknown> }
  | { readonly v: 1; readonly id: FrameId; readonly method: 'input_status'; readonly params: Record<string, unknown> }
  | { readonly v: 1; readonly id: FrameId; readonly method: 'cancel'; readonly params?: Record<string, unknown> };

export interface FrameRejection {
  readonly id: FrameId | null;
  readonly code: 'invalid_json' | 'invalid_frame' | 'unsupported_version' | 'unknown_method' | 'invalid_params' | 'frame_too_large';
  readonly message: string;
}

export const FRAME_METHODS = ['steer', 'input_status', 'cancel'] as const;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function readId(value: unknown): FrameId | null {
  if (typeof value === 'string' && value.length > 0 && value.length <= 256) return value;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  return null;
}

export function parseFrame(line: string): { ok: true; frame: ControlFrame } | { ok: false; rejection: FrameRejection } {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return { ok: false, rejection: { id: null, code: 'invalid_json', message: 'the line is not valid JSON; send one JSON object per line' } };
  }
  if (!isRecord(json)) return { ok: false, rejection: { id: null, code: 'invalid_frame', message: 'a frame must be a JSON object {v, id, method, params?}' } };
  const id = readId(json['id']);
  const reject = (code: FrameRejection['code'], message: string) => ({ ok: false as const, rejection: { id, code, message } });
  if (id === null) return reject('invalid_frame', 'id must be a non-empty string (at most 256 characters) or a number');
  if (json['v'] !== 1) return reject('unsupported_version', `unsupported frame version ${JSON.stringify(json['v'] ?? null)}; use v: 1`);
  const method = json['method'];
  if (typeof method !== 'string' || !(FRAME_METHODS as readonly string[]).includes(method)) {
    return reject('unknown_method', `unknown method ${JSON.stringify(method ?? null)}; use ${FRAME_METHODS.join(', ')} (there is no start frame: -p is the one query)`);
  }
  const params = json['params'];
  if (params !== undefined && !isRecord(params)) return reject('invalid_params', 'params must be an object');
  if (method === 'cancel') return { ok: true, frame: params === undefined ? { v: 1, id, method } : { v: 1, id, method, params } };
  if (params === undefined) return reject('invalid_params', `${method} needs params {inputId, target${method === 'steer' ? ', content, ack?' : ''}}`);
  return { ok: true, frame: { v: 1, id, method: method as 'steer' | 'input_status', params } };
}
