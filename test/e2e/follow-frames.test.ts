/**
 * Following the end of a streaming answer costs no forced layout inside the frame's writes: the
 * page reads `scrollHeight` (which lays out a dirty page) never inside an animation-frame callback,
 * where the transcript and the streamed part write the DOM, only where layout is already done
 * (app/chat-follow.ts: the resize observation after the frame's layout, the scroll event at its
 * start). The reads are counted by wrapping the page's `requestAnimationFrame` and the
 * `scrollHeight` getter: a count, not a time, so a loaded machine does not change it.
 */
import { describe, expect, it } from 'vitest';
import { randomMarkdown, splitAtRandom } from '../../bench/markdown-corpus.js';
import { prng } from '../helpers/prng.js';
import { TOKENS } from '../helpers/start-server.js';
import { BrowserHub, sessionPath } from './support.js';

const hub = BrowserHub.perFile();

type Counters = { inFrame: number; frames: number; reads: number; readsInFrames: number };

describe('following a streamed answer', () => {
  it('reads the page height in no animation-frame callback and ends at the end of the chat', async () => {
    const alice = await hub.rpc(TOKENS.alice);
    const agent = await hub.rpc(TOKENS.agent);
    const session = 'ahp-session:/follow-frames-e2e';
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote', title: 'Follow' });
    const page = await hub.open(TOKENS.alice, sessionPath(session));
    await page.locator('[data-testid=transcript]').waitFor();
    await page.evaluate(() => {
      const w = globalThis as unknown as { requestAnimationFrame(fn: (t: number) => void): number; __follow: Counters; Element: { prototype: object } };
      const c: Counters = { inFrame: 0, frames: 0, reads: 0, readsInFrames: 0 };
      w.__follow = c;
      const raf = w.requestAnimationFrame.bind(w);
      w.requestAnimationFrame = (fn) =>
        raf((t) => {
          c.inFrame++;
          c.frames++;
          try {
            fn(t);
          } finally {
            c.inFrame--;
          }
        });
      const desc = Object.getOwnPropertyDescriptor(w.Element.prototype, 'scrollHeight')!;
      Object.defineProperty(w.Element.prototype, 'scrollHeight', {
        configurable: true,
        get(this: unknown) {
          c.reads++;
          if (c.inFrame > 0) c.readsInFrames++;
          return desc.get!.call(this);
        },
      });
    });
    const random = prng(20261204);
    const text = randomMarkdown(random, 60_000);
    await alice.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId: 't1', startedAt: new Date().toISOString(), message: { text: 'long', origin: { kind: 'user' } } });
    await agent.dispatchAndWait(chat, { type: 'chat/responsePart', turnId: 't1', part: { kind: 'markdown', id: 'p1', content: '' } });
    const chunks = splitAtRandom(random, text, 240);
    for (let i = 0; i < chunks.length; i++) {
      const action = { type: 'chat/delta', turnId: 't1', partId: 'p1', content: chunks[i] };
      if (i % 16 === 15) await agent.dispatchAndWait(chat, action);
      else agent.dispatch(chat, action);
    }
    await agent.dispatchAndWait(chat, { type: 'chat/turnComplete', turnId: 't1', duration: 1 });
    await page.waitForFunction(
      (want) => (globalThis as unknown as { document: { querySelector(s: string): { dataset: Record<string, string | undefined> } | null } }).document.querySelector('article.turn .part.md')?.dataset['shownChars'] === String(want),
      text.length,
      {
        timeout: 60_000,
      },
    );
    await page.locator('.turn-footer', { hasText: 'Completed' }).waitFor();
    // The end is in view (a few pixels of slack, as the app's own test), once the last frame settled.
    await page.waitForFunction(
      () => {
        const w = globalThis as unknown as { innerHeight: number; scrollY: number; document: { documentElement: { scrollHeight: number } } };
        return w.innerHeight + w.scrollY >= w.document.documentElement.scrollHeight - 48;
      },
      undefined,
      { timeout: 10_000, polling: 50 },
    );
    const counters = await page.evaluate(() => (globalThis as unknown as { __follow: Counters }).__follow);
    // The answer took many frames, and the end was followed (the height was read) along the way.
    expect(counters.frames).toBeGreaterThan(5);
    expect(counters.reads).toBeGreaterThan(0);
    expect(counters.readsInFrames).toBe(0);
    expect(await page.locator('[data-testid=jump-latest]').isHidden()).toBe(true);
    expect(hub.pageErrors).toEqual([]);
  }, 120_000);
});
