/** Seed 003 items 55/56: the control channel's stop and back-pressure rules (in-process streams). */
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { startControl, type HeadlessIo } from '../../cli/headless.js';
import type { ControlFrame } from '../../cli/frames.js';
import { waitFor } from '../helpers/wait-for.js';

function io(stdout: Writable): HeadlessIo & { stdin: PassThrough } {
  return { stdin: new PassThrough(), stdout, stderr: new PassThrough(), onInterrupt: () => () => undefined };
}

describe('control channel', () => {
  it('56: pauses reading stdin while stdout is back-pressured and resumes on drain', async () => {
    const held: Array<() => void> = [];
    const written: string[] = [];
    const stdout = new Writable({
      highWaterMark: 1,
      write(chunk: Buffer, _enc, cb) {
        written.push(chunk.toString());
        held.push(cb);
      },
    });
    const ch = io(stdout);
    const handled: ControlFrame[] = [];
    const stop = startControl(
      ch,
      (r) => stdout.write(JSON.stringify(r) + '\n'),
      async (f) => {
        handled.push(f);
        return { ok: f.id };
      },
      () => false,
    );
    ch.stdin.write('{"v":1,"id":"a","method":"cancel"}\n');
    await waitFor(() => (handled.length === 1 ? true : undefined));
    await waitFor(() => (ch.stdin.isPaused() ? true : undefined), { what: 'stdin paused under back-pressure' });
    // Release the consumer: the writable drains and reading resumes.
    while (held.length > 0) held.shift()!();
    await waitFor(() => (!ch.stdin.isPaused() ? true : undefined), { what: 'stdin resumed after drain' });
    ch.stdin.write('{"v":1,"id":"b","method":"cancel"}\n');
    await waitFor(() => (handled.length === 2 ? true : undefined));
    while (held.length > 0) held.shift()!();
    await stop();
    expect(written.map((w) => JSON.parse(w) as { id: string }).map((r) => r.id)).toEqual(['a', 'b']);
  });

  it('55: after stop (the query ended) nothing more is read or answered; a frame in flight is answered first, a queued one never', async () => {
    const written: Array<{ id: unknown }> = [];
    const stdout = new PassThrough();
    const ch = io(stdout);
    let finished = false;
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const handled: unknown[] = [];
    // Every answer is recorded, also after the query ended, so a late answer would show here.
    const stop = startControl(
      ch,
      (r) => {
        written.push(r as { id: unknown });
        return true;
      },
      async (f) => {
        handled.push(f.id);
        if (f.id === 'slow') await slow;
        return { done: f.id };
      },
      () => finished,
    );
    ch.stdin.write('{"v":1,"id":"slow","method":"cancel"}\n{"v":1,"id":"queued","method":"cancel"}\n');
    await waitFor(() => (handled.length === 1 ? true : undefined));
    const stopped = stop();
    release();
    await stopped;
    finished = true;
    // 'queued' was already read into the channel when it stopped: it is dropped, not handled.
    await new Promise((resolve) => setImmediate(resolve));
    expect(written.map((r) => r.id)).toEqual(['slow']);
    expect(handled).toEqual(['slow']);
    // Nothing can be read any more: stdin is closed by stop().
    expect(ch.stdin.destroyed).toBe(true);
  });
});
