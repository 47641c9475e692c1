/** Seed 003 items 50/51/54: control frame validation. */
import { describe, expect, it } from 'vitest';
import { parseFrame } from '../../cli/frames.js';

const target = { historyEpoch: 'E', turnId: 'T' };

describe('parseFrame', () => {
  it('50: accepts version-1 steer, input_status and cancel frames and keeps their ids (string or number)', () => {
    expect(parseFrame(JSON.stringify({ v: 1, id: 'a', method: 'steer', params: { inputId: 'ui-001', target, content: { text: 'x' }, ack: 'memory' } }))).toMatchObject({ ok: true, frame: { id: 'a', method: 'steer' } });
    expect(parseFrame(JSON.stringify({ v: 1, id: 2, method: 'input_status', params: { inputId: 'ui-001', target } }))).toMatchObject({ ok: true, frame: { id: 2, method: 'input_status' } });
    expect(parseFrame('{"v":1,"id":"c","method":"cancel"}')).toEqual({ ok: true, frame: { v: 1, id: 'c', method: 'cancel' } });
  });

  it('54: malformed frames get explicit rejections with codes, echoing the id when readable', () => {
    const cases: Array<[string, string, unknown]> = [
      ['{not json', 'invalid_json', null],
      ['[1]', 'invalid_frame', null],
      ['"steer"', 'invalid_frame', null],
      ['{"v":1,"method":"cancel"}', 'invalid_frame', null],
      ['{"v":1,"id":"","method":"cancel"}', 'invalid_frame', null],
      ['{"v":1,"id":{},"method":"cancel"}', 'invalid_frame', null],
      ['{"v":2,"id":"x","method":"cancel"}', 'unsupported_version', 'x'],
      ['{"id":"x","method":"cancel"}', 'unsupported_version', 'x'],
      ['{"v":1,"id":"x","method":"start","params":{"prompt":"again"}}', 'unknown_method', 'x'],
      ['{"v":1,"id":"x","method":"prompt"}', 'unknown_method', 'x'],
      ['{"v":1,"id":"x","method":"steer"}', 'invalid_params', 'x'],
      ['{"v":1,"id":"x","method":"steer","params":[1]}', 'invalid_params', 'x'],
      ['{"v":1,"id":"x","method":"input_status"}', 'invalid_params', 'x'],
    ];
    for (const [line, code, id] of cases) {
      const r = parseFrame(line);
      expect({ line, r }).toMatchObject({ line, r: { ok: false, rejection: { code, id, message: expect.any(String) } } });
    }
  });
});
