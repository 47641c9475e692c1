/**
 * The service worker's reading of the hub's push payload (app/push-payload.ts): what a request,
 * a question and a withdrawal become, and that anything else is refused with a reason (the worker
 * then shows a notification saying so, never nothing); a click never leaves the app's origin.
 */
import { describe, expect, it } from 'vitest';
import { clickTarget, isAppRoute, parsePushPayload } from '../../app/push-payload.js';

const REQUEST = {
  v: 1,
  kind: 'request',
  tag: 'chat:ahp-chat:/s1/main',
  title: 'Deploy: run deploy?',
  body: 'The agent wants to run deploy',
  url: '/s/s1?chat=ahp-chat%3A%2Fs1%2Fmain#input=tc-1',
  session: 'ahp-session:/s1',
  chat: 'ahp-chat:/s1/main',
  requestId: 'tc-1',
  requestKind: 'permission',
  tool: 'deploy',
  actions: [
    { action: 'approve', title: 'Approve' },
    { action: 'deny', title: 'Deny' },
  ],
  actionToken: 'tok-1',
};

describe('push payload', () => {
  it('reads a permission request with its buttons and token', () => {
    const { v: _version, ...rest } = REQUEST;
    expect(parsePushPayload(JSON.stringify(REQUEST))).toStrictEqual({ ok: true, payload: rest });
  });

  it('keeps only the two buttons it can answer, and none without a token', () => {
    const odd = { ...REQUEST, actions: [{ action: 'always', title: 'Always' }, { action: 'approve', title: 'Approve' }, { action: 'deny', title: '' }, 'x'] };
    const parsed = parsePushPayload(JSON.stringify(odd));
    expect(parsed.ok && parsed.payload.kind === 'request' && parsed.payload.actions).toEqual([{ action: 'approve', title: 'Approve' }]);
    const viewer = parsePushPayload(JSON.stringify({ ...REQUEST, actionToken: undefined }));
    expect(viewer.ok && viewer.payload.kind === 'request' && viewer.payload.actions).toEqual([]);
  });

  it('reads a withdrawal by its tag alone', () => {
    expect(parsePushPayload(JSON.stringify({ v: 1, kind: 'resolved', tag: 'chat:ahp-chat:/s1/main' }))).toEqual({ ok: true, payload: { kind: 'resolved', tag: 'chat:ahp-chat:/s1/main' } });
  });

  it('keeps the request a withdrawal names, so a late one spares a newer notification of the chat', () => {
    const parsed = parsePushPayload(JSON.stringify({ v: 1, kind: 'resolved', tag: 'chat:ahp-chat:/s1/main', requestId: 'req-7' }));
    expect(parsed).toStrictEqual({ ok: true, payload: { kind: 'resolved', tag: 'chat:ahp-chat:/s1/main', requestId: 'req-7' } });
  });

  it('refuses what is not the hub payload, saying why', () => {
    const reasons = [
      undefined,
      '',
      'nope',
      '[1]',
      JSON.stringify({ ...REQUEST, v: 2 }),
      JSON.stringify({ ...REQUEST, tag: '' }),
      JSON.stringify({ ...REQUEST, kind: 'other' }),
      JSON.stringify({ ...REQUEST, url: undefined }),
      'x'.repeat(20_000),
    ].map((t) => {
      const r = parsePushPayload(t);
      return r.ok ? 'accepted' : r.reason;
    });
    expect(reasons).toEqual([
      'the push carried no data',
      'the push carried no data',
      'the push data is not JSON',
      'the push data is not a JSON object',
      'unknown payload version 2 (expected 1)',
      'the push data has no tag',
      'unknown kind "other"',
      'a request push needs a title and a url',
      'the push data is 20000 characters, over 16384',
    ]);
  });

  it('opens only paths of the app origin', () => {
    const origin = 'https://hub.example';
    expect(clickTarget('/s/s1?chat=c#input=x', origin)).toBe('https://hub.example/s/s1?chat=c#input=x');
    expect(clickTarget('https://evil.example/phish', origin)).toBe('https://hub.example/');
    expect(clickTarget('javascript:alert(1)', origin)).toBe('https://hub.example/');
    expect(clickTarget(undefined, origin)).toBe('https://hub.example/');
    expect([isAppRoute('/'), isAppRoute('/s/abc'), isAppRoute('/api/push/key'), isAppRoute('/s/a/b')]).toEqual([true, true, false, false]);
  });
});
