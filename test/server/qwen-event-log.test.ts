/**
 * The qwen-format event log of one session (server/qwen-serve/event-log.ts) and qwen's option-id
 * aliases (server/interactions/interaction-model.ts `offeredOption`).
 */
import { describe, expect, it } from 'vitest';
import { QwenSessionLog, qwenSseMessage } from '../../server/qwen-serve/event-log.js';
import { offeredOption } from '../../server/interactions/interaction-model.js';
import type { PermissionOption } from '../../server/acp-mapping/index.js';

const update = (text: string) => JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: 's1', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } } } });
const parse = (text: string) =>
  JSON.parse(
    text
      .split('\n')
      .find((l) => l.startsWith('data: '))!
      .slice(6),
  );

describe('qwen session event log', () => {
  it('numbers frames 1, 2, 3… per session and frames them as {id, v: 1, type, data, promptId?, _meta: {serverTimestamp}}', () => {
    let clock = 1_000;
    const log = new QwenSessionLog('s1', { bufferedFrames: 10, now: () => clock++ });
    const seen: unknown[] = [];
    log.listen((f) => seen.push(parse(f.text)));
    log.notePrompt('p1');
    log.streamListener.deliver({ id: 'x-1', seq: 1, turnId: 'p1', text: update('hi') });
    log.streamListener.deliver({ id: 'x-2', seq: 2, turnId: 'other', text: update('there') });
    log.streamListener.deliver({ id: 'x-3', seq: 3, turnId: 'p1', turnEnd: { stopReason: 'end_turn' }, text: '{}' });
    expect(seen).toEqual([
      { id: 1, v: 1, type: 'session_update', data: { sessionId: 's1', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'hi' } } }, promptId: 'p1', _meta: { serverTimestamp: 1_000 } },
      { id: 2, v: 1, type: 'session_update', data: { sessionId: 's1', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'there' } } }, _meta: { serverTimestamp: 1_001 } },
      { id: 3, v: 1, type: 'turn_complete', data: { sessionId: 's1', promptId: 'p1', stopReason: 'end_turn' }, promptId: 'p1', _meta: { serverTimestamp: 1_002 } },
    ]);
    expect(log.headId).toBe(3);
  });

  it('a failed turn is turn_error with the error type as code; permission frames keep their data', () => {
    const log = new QwenSessionLog('s1', { bufferedFrames: 10 });
    log.streamListener.deliver({ id: 'x', seq: 1, text: JSON.stringify({ jsonrpc: '2.0', method: '_qwen/notify', params: { kind: 'permission_request', data: { requestId: 'r1', sessionId: 's1', options: [] } } }) });
    log.streamListener.deliver({ id: 'x', seq: 2, turnId: 't1', turnEnd: { stopReason: 'error', error: { errorType: 'toolFailed', message: 'disk full' } }, text: '{}' });
    const frames = log.framesAfter(0, log.epoch)!.map((f) => parse(f.text));
    expect(frames.map((f) => f.type)).toEqual(['permission_request', 'turn_error']);
    expect(frames[0].data).toEqual({ requestId: 'r1', sessionId: 's1', options: [] });
    expect(frames[1].data).toEqual({ sessionId: 's1', promptId: 't1', code: 'toolFailed', message: 'disk full' });
  });

  it('replays after a numeric id only inside its epoch and its buffer', () => {
    const log = new QwenSessionLog('s1', { bufferedFrames: 3 });
    for (let i = 0; i < 5; i++) log.publish('session_update', { n: i });
    expect(log.framesAfter(5, log.epoch)).toEqual([]);
    expect(log.framesAfter(3, undefined)!.map((f) => f.id)).toEqual([4, 5]);
    expect(log.framesAfter(2, log.epoch)!.map((f) => f.id)).toEqual([3, 4, 5]);
    expect(log.framesAfter(1, log.epoch)).toBeUndefined(); // frame 2 was evicted
    expect(log.framesAfter(6, log.epoch)).toBeUndefined(); // newer than the head
    expect(log.framesAfter(4, 'another-epoch')).toBeUndefined();
    expect(log.earliestAvailableId).toBe(3);
    expect(new QwenSessionLog('s1', { bufferedFrames: 3 }).epoch).not.toBe(log.epoch);
  });

  it('closing ends queued prompts as cancelled, then says session_closed, and publishes nothing after', () => {
    const log = new QwenSessionLog('s1', { bufferedFrames: 10 });
    log.queue.push({ promptId: 'q1', text: 'x', queuedAt: 0, start: async () => {} });
    let closed = 0;
    log.onClosed = () => closed++;
    log.streamListener.end();
    log.publish('session_update', {});
    expect(log.framesAfter(0, undefined)!.map((f) => [f.type, parse(f.text).data])).toEqual([
      ['prompt_cancelled', { sessionId: 's1' }],
      ['turn_complete', { sessionId: 's1', promptId: 'q1', stopReason: 'cancelled' }],
      ['session_closed', { sessionId: 's1', reason: 'session_disposed' }],
    ]);
    expect(closed).toBe(1);
    expect(log.queue).toEqual([]);
  });

  it('a cancelled prompt says prompt_cancelled before turn_complete; pending prompts list the running one, then the queue', () => {
    const log = new QwenSessionLog('s1', { bufferedFrames: 10 });
    log.notePrompt('p1');
    log.running = { promptId: 'p1', text: 'first', queuedAt: 5 };
    log.queue.push({ promptId: 'p2', text: 'second', queuedAt: 6, start: async () => {} });
    expect(log.pendingPrompts()).toEqual([
      { promptId: 'p1', text: 'first', queuedAt: 5, state: 'running' },
      { promptId: 'p2', text: 'second', queuedAt: 6, state: 'queued' },
    ]);
    log.streamListener.deliver({ id: 'x', seq: 1, turnId: 'p1', turnEnd: { stopReason: 'cancelled' }, text: '{}' });
    const frames = log.framesAfter(0, undefined)!.map((f) => parse(f.text));
    expect(frames.map((f) => [f.type, f.promptId, f.data])).toEqual([
      ['prompt_cancelled', 'p1', { sessionId: 's1' }],
      ['turn_complete', 'p1', { sessionId: 's1', promptId: 'p1', stopReason: 'cancelled' }],
    ]);
    expect(log.pendingPrompts().map((p) => p.promptId)).toEqual(['p2']);
  });

  it('a frame without id has no id line (the client keeps its Last-Event-ID)', () => {
    expect(qwenSseMessage(undefined, 'state_resync_required', { reason: 'x' })).toBe('data: {"v":1,"type":"state_resync_required","data":{"reason":"x"}}\n\n');
    expect(qwenSseMessage(7, 'a', {}, 'p')).toBe('id: 7\ndata: {"id":7,"v":1,"type":"a","data":{},"promptId":"p"}\n\n');
  });
});

describe("qwen's option ids", () => {
  const tool: PermissionOption[] = [
    { optionId: 'proceed_once', name: 'Allow', kind: 'allow_once' },
    { optionId: 'reject_once', name: 'Deny', kind: 'reject_once' },
    { optionId: 'proceed_always', name: 'Always allow', kind: 'allow_always' },
    { optionId: 'reject_always', name: 'Always deny', kind: 'reject_always' },
  ];
  const question: PermissionOption[] = [
    { optionId: 'proceed_once', name: 'Submit', kind: 'allow_once' },
    { optionId: 'decline', name: 'Decline', kind: 'reject_once' },
  ];

  it('proceed_always_project / proceed_always_user stand for allow_always, cancel for the reject_once option', () => {
    expect(offeredOption(tool, 'proceed_always_project')?.optionId).toBe('proceed_always');
    expect(offeredOption(tool, 'proceed_always_user')?.optionId).toBe('proceed_always');
    expect(offeredOption(tool, 'cancel')?.optionId).toBe('reject_once');
    expect(offeredOption(question, 'cancel')?.optionId).toBe('decline');
  });

  it('an offered id wins over an alias, and an alias with nothing to stand for is not offered', () => {
    const withOwnCancel: PermissionOption[] = [...tool, { optionId: 'cancel', name: 'Cancel', kind: 'reject_once' }];
    expect(offeredOption(withOwnCancel, 'cancel')?.name).toBe('Cancel');
    expect(offeredOption(question, 'proceed_always_project')).toBeUndefined();
    expect(offeredOption(tool, 'toString')).toBeUndefined();
    expect(offeredOption(tool, 'proceed_always_server')).toBeUndefined();
  });
});
