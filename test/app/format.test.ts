/** Display helpers of the browser app: readable session titles, errors in words, who answered. */
import { describe, expect, it } from 'vitest';
import { answeredByOf, answeredByText, displayTitle, errorInWords, personName, wonRaceText } from '../../app/format.js';

describe('displayTitle', () => {
  it('shows the first line of a prompt used as a title', () => {
    expect(displayTitle('Review the contract\nand list the open clauses')).toBe('Review the contract');
  });

  it('reads a demo script title as its first "say", not as JSON', () => {
    expect(displayTitle(JSON.stringify({ script: [{ sleep: 5 }, { say: 'Summarise the Q3 report' }] }))).toBe('Script: Summarise the Q3 report');
    expect(displayTitle(JSON.stringify({ script: [{ sleep: 5 }] }))).toBe('Demo-agent script (1 step)');
  });

  it('uses a text field of other JSON, keeps a title that only starts with a brace, and shortens long ones', () => {
    expect(displayTitle('{"text": "Hello there"}')).toBe('Hello there');
    expect(displayTitle('{draft} notes')).toBe('{draft} notes');
    expect(displayTitle('x'.repeat(200))).toHaveLength(80);
    expect(displayTitle('   ')).toBe('Untitled session');
  });
});

describe('errorInWords', () => {
  it('says what happened without internal codes', () => {
    expect(errorInWords('scriptFailure', 'Disk quota exceeded')).toBe('The agent stopped with an error: “Disk quota exceeded”.');
    expect(errorInWords('hubRestarted', 'The hub restarted while this turn was running; the turn was ended.')).toBe('The hub restarted while the agent was working, so this turn was stopped.');
    expect(errorInWords('somethingNew', undefined)).toBe('The agent stopped with an error.');
    // Failures whose message is already the hub's sentence (with the agent's cause) are shown as they are.
    const unreachable = 'The agent could not reach its model at http://127.0.0.1:9/v1: Connection error. (session/prompt failed: Internal error, JSON-RPC -32603).';
    expect(errorInWords('modelUnreachable', unreachable)).toBe(unreachable);
    expect(errorInWords('agentStartFailed', 'The agent could not be started: it exited with code 3 before it answered initialize.')).toBe('The agent could not be started: it exited with code 3 before it answered initialize.');
    expect(errorInWords('agentStartFailed', undefined)).toBe('The agent could not be started.');
  });
});

describe('answeredBy', () => {
  it('reads the hub stamp and words it with who, where and when', () => {
    const by = answeredByOf({ 'hub/answeredBy': { user: 'bob', surface: 'Qwen route', at: '2026-11-30T10:42:00.000Z' } });
    expect(by).toEqual({ user: 'bob', surface: 'Qwen route', at: '2026-11-30T10:42:00.000Z' });
    expect(answeredByText(by!)).toMatch(/^bob · via Qwen route · \d\d:\d\d/);
    expect(answeredByText({ user: 'alice', surface: 'app', at: 'not a time' })).toBe('alice · in the app');
    expect(answeredByOf({ 'hub/answeredBy': { user: 3 } })).toBeUndefined();
  });

  it('names the dev principal "you" in dev mode only, and the hub\'s own principals "the hub"', () => {
    const dev = { user: 'dev', surface: 'app', at: 'not a time' };
    expect(answeredByText(dev, true)).toBe('you · in the app');
    expect(answeredByText(dev, false)).toBe('dev · in the app');
    expect(wonRaceText(dev, true, undefined, true)).toBe('You approved this first.');
    expect(personName('hub:steering', true)).toBe('the hub');
    expect(personName('alice', true)).toBe('alice');
  });
});
