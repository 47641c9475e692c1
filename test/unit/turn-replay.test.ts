import { describe, expect, it } from 'vitest';
import { TurnReplay } from '../../server/agents/turn-replay.js';
import type { ResponsePart } from '../../shared/protocol/state.js';

const md = (id: string, content: string): ResponsePart => ({ kind: 'markdown', id, content }) as ResponsePart;

describe('TurnReplay: matching a re-run agent against what the turn holds', () => {
  it('skips text already said, finishes a part cut off mid-stream, and says new text once the record is used up', () => {
    const replay = new TurnReplay([md('p1', 'Hello there.'), md('p2', 'Second li')]);
    expect(replay.say('Hello there.')).toEqual({ kind: 'said' });
    expect(replay.say('Second line.')).toEqual({ kind: 'partial', partId: 'p2', rest: 'ne.' });
    expect(replay.replaying).toBe(false);
    expect(replay.say('Third.')).toEqual({ kind: 'new' });
  });

  it('passes over parts that are not said again (a steering input acknowledged once) and keeps other kinds out of the match', () => {
    const parts = [md('p1', 'Step one.'), md('ack', 'Taking your addition into account: “faster”'), { kind: 'inputRequest', request: { id: 'r1', message: 'Q' } } as ResponsePart, md('p2', 'Step two.')];
    const replay = new TurnReplay(parts);
    expect(replay.say('Step one.')).toEqual({ kind: 'said' });
    expect(replay.say('Step two.')).toEqual({ kind: 'said' });
    expect(replay.say('Step three.')).toEqual({ kind: 'new' });
  });
});
