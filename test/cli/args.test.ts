/** Seed 003 item 48: headless flags. */
import { describe, expect, it } from 'vitest';
import { parseArgs, UsageError } from '../../cli/args.js';

const base = ['run', '--url', 'ws://127.0.0.1:1/ahp', '--session', 's1'];
const ndjson = ['--output-format', 'stream-json', '--input-format', 'ndjson'];

describe('parseArgs', () => {
  it('48: parses run with --url, --session (a bare id gets the ahp-session:/ prefix), -p, --token (default $AHP_TOKEN) and the output and input formats (default text)', () => {
    expect(parseArgs([...base, '-p', 'review the contract', ...ndjson])).toEqual({
      command: 'run',
      url: 'ws://127.0.0.1:1/ahp',
      session: 'ahp-session:/s1',
      prompt: 'review the contract',
      token: undefined,
      outputFormat: 'stream-json',
      inputFormat: 'ndjson',
    });
    expect(parseArgs(['run', '--url=ws://h/ahp', '--session=ahp-session:/x', '--prompt=hi', '--token', 'tok'])).toMatchObject({ session: 'ahp-session:/x', prompt: 'hi', token: 'tok', outputFormat: 'text', inputFormat: 'text' });
    expect(parseArgs([...base, '-p', 'x'], { AHP_TOKEN: 'from-env' })).toMatchObject({ token: 'from-env' });
    expect(parseArgs(['--help'])).toEqual({ command: 'help' });
  });

  it('48: -p must be given and non-empty; one -p is one query', () => {
    expect(() => parseArgs([...base, ...ndjson])).toThrow(/-p .* is required/);
    expect(() => parseArgs([...base, '-p', '', ...ndjson])).toThrow(/-p must not be empty/);
    expect(() => parseArgs([...base, '-p', ' \n\t', ...ndjson])).toThrow(/-p must not be empty/);
    expect(() => parseArgs([...base, '-p', 'a', '-p', 'b'])).toThrow(/more than once/);
  });

  it('48: --cc-compat, --bg and aggregated output are refused with ndjson input, with a clear message', () => {
    expect(() => parseArgs([...base, '-p', 'x', ...ndjson, '--cc-compat'])).toThrow(/--cc-compat cannot be combined with --input-format ndjson/);
    expect(() => parseArgs([...base, '-p', 'x', ...ndjson, '--bg'])).toThrow(/--bg cannot be combined/);
    expect(() => parseArgs([...base, '-p', 'x', '--output-format', 'json', '--input-format', 'ndjson'])).toThrow(/needs --output-format stream-json/);
    expect(() => parseArgs([...base, '-p', 'x', '--output-format', 'text', '--input-format', 'ndjson'])).toThrow(UsageError);
    expect(() => parseArgs([...base, '-p', 'x', '--input-format', 'ndjson'])).toThrow(/needs --output-format stream-json/);
  });

  it('rejects unknown commands, options and values', () => {
    expect(() => parseArgs(['start'])).toThrow(/unknown command/);
    expect(() => parseArgs([...base, '-p', 'x', '--what'])).toThrow(/unknown option/);
    expect(() => parseArgs([...base, '-p', 'x', '--output-format', 'yaml'])).toThrow(/--output-format must be/);
    expect(() => parseArgs(['run', '--url', 'http://x', '--session', 's', '-p', 'x'])).toThrow(/ws:\/\//);
    expect(() => parseArgs(['run', '--url', 'ws://x/ahp', '-p', 'x'])).toThrow(/--session/);
    expect(() => parseArgs([...base, '-p'])).toThrow(/needs a value/);
  });
});
