/**
 * Streamed answers render exactly: for 10 seeded random streams (markdown with fenced code,
 * tables and lists, split at random points), the text the live page shows once the stream ends
 * equals the text of a cold render of the final state, and the final state holds the whole text.
 * The live page renders incrementally (finished blocks once, the tail per frame); the cold page
 * renders what is already whole. The last stream is longer than a frame's slice
 * (markdown-stream.ts `SLICE_CHARS`), so both pages also catch up over several frames and group
 * finished blocks into chunks.
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { randomMarkdown, splitAtRandom } from '../../bench/markdown-corpus.js';
import { prng } from '../helpers/prng.js';
import { TOKENS } from '../helpers/start-server.js';
import type { RpcClient } from '../helpers/rpc-client.js';
import { BrowserHub, sessionPath } from './support.js';

const STREAMS = 10;
const hub = BrowserHub.perFile();

async function partTexts(page: Page, texts: readonly string[]): Promise<string[]> {
  await page
    .locator('.turn-footer', { hasText: 'Completed' })
    .nth(STREAMS - 1)
    .waitFor();
  // Every part has all of its text on screen (a long one takes several frames).
  await page.waitForFunction(
    (lengths) => {
      const parts = [...(globalThis as unknown as { document: { querySelectorAll(s: string): Iterable<{ dataset: Record<string, string | undefined> }> } }).document.querySelectorAll('article.turn .part.md')];
      return parts.length === lengths.length && parts.every((p, i) => p.dataset['shownChars'] === String(lengths[i]));
    },
    texts.map((t) => t.length),
    { timeout: 60_000 },
  );
  return page.locator('article.turn .part.md').evaluateAll((parts) => parts.map((p) => p.textContent ?? ''));
}

async function stream(alice: RpcClient, agent: RpcClient, page: Page, chat: string, index: number, text: string, chunks: readonly string[]): Promise<void> {
  const turnId = `turn-${index}`;
  const partId = `part-${index}`;
  await alice.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId, startedAt: new Date().toISOString(), message: { text: `stream ${index}`, origin: { kind: 'user' } } });
  await agent.dispatchAndWait(chat, { type: 'chat/responsePart', turnId, part: { kind: 'markdown', id: partId, content: '' } });
  for (let i = 0; i < chunks.length; i++) {
    const action = { type: 'chat/delta', turnId, partId, content: chunks[i] };
    // Every 16th delta waits for its echo, so the page gets the stream in many envelopes and frames.
    if (i % 16 === 15) await agent.dispatchAndWait(chat, action);
    else agent.dispatch(chat, action);
    if (i === Math.floor(chunks.length / 2)) {
      // Halfway: the page has drawn part of the answer (the incremental path is exercised).
      await page.locator(`article.turn[data-turn="${turnId}"] .part.md`).filter({ hasText: /\S/ }).waitFor();
    }
  }
  const envelope = await agent.dispatchAndWait(chat, { type: 'chat/turnComplete', turnId, duration: 1 });
  expect(envelope.rejectionReason).toBeUndefined();
  expect(text.length).toBeGreaterThan(0);
}

describe('streamed answers in the browser', () => {
  it("show exactly the final state's text for 10 random markdown streams", async () => {
    const alice = await hub.rpc(TOKENS.alice);
    const agent = await hub.rpc(TOKENS.agent);
    const session = 'ahp-session:/streams-e2e';
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote', title: 'Streams' });
    const live = await hub.open(TOKENS.alice, sessionPath(session));
    const texts: string[] = [];
    for (let i = 0; i < STREAMS; i++) {
      const random = prng(20261201 + i);
      const text = randomMarkdown(random, i === STREAMS - 1 ? 40_000 : 1_500 + Math.floor(random() * 3_000));
      texts.push(text);
      await stream(alice, agent, live, chat, i, text, splitAtRandom(random, text, 24));
    }
    const streamed = await partTexts(live, texts);
    const cold = await partTexts(await hub.open(TOKENS.alice, sessionPath(session)), texts);
    // The long part's finished blocks sit in more than one chunk.
    expect(await live.locator('article.turn').last().locator('.md-chunk').count()).toBeGreaterThan(1);
    expect(streamed).toHaveLength(STREAMS);
    expect(streamed).toEqual(cold);
    // The final state holds every stream whole.
    const state = (await alice.subscribe<{ turns: Array<{ responseParts: Array<{ content?: string }> }> }>(chat)).state;
    expect(state.turns.map((t) => t.responseParts[0]?.content)).toEqual(texts);
    expect(hub.pageErrors).toEqual([]);
  }, 180_000);

  it('a long answer opened cold is whole in the page at once, plain until formatted, findable', async () => {
    const alice = await hub.rpc(TOKENS.alice);
    const agent = await hub.rpc(TOKENS.agent);
    const session = 'ahp-session:/long-cold-e2e';
    const { defaultChat: chat } = await alice.request<{ defaultChat: string }>('createSession', { channel: session, provider: 'remote', title: 'Long' });
    // 300,000 characters: 49 frames of formatting (SLICE_CHARS), ending in words no markdown changes.
    const ending = 'the last words of this long answer are plain';
    const text = `${randomMarkdown(prng(20261204), 300_000)}\n\n${ending}\n`;
    await alice.dispatchAndWait(chat, { type: 'chat/turnStarted', turnId: 'long', startedAt: new Date().toISOString(), message: { text: 'long', origin: { kind: 'user' } } });
    await agent.dispatchAndWait(chat, { type: 'chat/responsePart', turnId: 'long', part: { kind: 'markdown', id: 'long-part', content: '' } });
    for (let at = 0; at < text.length; at += 30_000) await agent.dispatchAndWait(chat, { type: 'chat/delta', turnId: 'long', partId: 'long-part', content: text.slice(at, at + 30_000) });
    await agent.dispatchAndWait(chat, { type: 'chat/turnComplete', turnId: 'long', duration: 1 });
    const page = await hub.open(TOKENS.alice, sessionPath(session));
    const part = page.locator('article.turn .part.md').last();
    // The first moment the page holds all the text, most of it still waits for the formatter.
    const firstWhole = await page.waitForFunction(
      (want) => {
        const p = [...(globalThis as unknown as { document: { querySelectorAll(s: string): Iterable<{ dataset: Record<string, string | undefined> }> } }).document.querySelectorAll('article.turn .part.md')].pop();
        return p?.dataset['textChars'] === String(want) ? Number(p.dataset['shownChars']) : false;
      },
      text.length,
      { timeout: 30_000, polling: 'raf' },
    );
    expect(await firstWhole.jsonValue()).toBeLessThan(text.length / 2);
    // Find-in-page reaches the end while it is plain text.
    expect(await part.evaluate((el, words) => (el.textContent ?? '').includes(words), ending)).toBe(true);
    expect(await page.evaluate((words) => (globalThis as unknown as { find(s: string): boolean }).find(words), ending)).toBe(true);
    // Then it is formatted, whole, and no plain text is left.
    await page.waitForFunction(
      (want) =>
        (globalThis as unknown as { document: { querySelector(s: string): { dataset: Record<string, string | undefined> } | null } }).document.querySelector('article.turn:last-of-type .part.md')?.dataset['shownChars'] === String(want),
      text.length,
      { timeout: 60_000 },
    );
    expect(await part.locator('.md-backlog').evaluate((el) => ({ hidden: (el as unknown as { hidden: boolean }).hidden, text: el.textContent }))).toEqual({ hidden: true, text: '' });
    expect(await part.evaluate((el, words) => (el.textContent ?? '').trimEnd().endsWith(words), ending)).toBe(true);
    expect(hub.pageErrors).toEqual([]);
  }, 120_000);
});
