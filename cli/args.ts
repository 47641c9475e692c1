/**
 * Command-line parsing for `ahp-hub-cli run` (headless mode). Pure: returns options or throws a
 * UsageError whose message is printed as is (exit code 2).
 */
import { asSessionUri, SESSION_SCHEME } from '../shared/protocol/uris.js';

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export type OutputFormat = 'stream-json' | 'json' | 'text';
export type InputFormat = 'ndjson' | 'text';

export interface RunOptions {
  readonly command: 'run';
  readonly url: string;
  /** `ahp-session:/<id>` (a bare id is prefixed). */
  readonly session: string;
  readonly prompt: string;
  readonly token: string | undefined;
  readonly outputFormat: OutputFormat;
  readonly inputFormat: InputFormat;
}

export const USAGE = `usage: ahp-hub-cli run --url ws://HOST:PORT/ahp --session <id> -p "<prompt>" [--token TOKEN]
                      [--output-format stream-json|json|text] [--input-format ndjson|text]

  -p, --prompt        the one query of this run (non-empty)
  --session           ahp-session id (or full ahp-session:/ URI); created when it does not exist
  --output-format     stream-json: NDJSON records on stdout; json: one final result; text: final text (default)
  --input-format      ndjson: control frames on stdin (needs --output-format stream-json); text: stdin is not read (default)
  --token             bearer token (default: $AHP_TOKEN)`;

const VALUE_FLAGS = new Set(['--url', '--session', '-p', '--prompt', '--token', '--output-format', '--input-format']);
const BOOLEAN_FLAGS = new Set(['--cc-compat', '--bg']);

export function parseArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): RunOptions | { command: 'help' } {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') return { command: 'help' };
  const [command, ...rest] = argv;
  if (command !== 'run') throw new UsageError(`unknown command ${JSON.stringify(command)}; the only command is "run"\n${USAGE}`);
  const values = new Map<string, string>();
  const flags = new Set<string>();
  for (let i = 0; i < rest.length; i++) {
    let arg = rest[i]!;
    let inline: string | undefined;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    if (eq !== -1) {
      inline = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    if (arg === '--help' || arg === '-h') return { command: 'help' };
    if (BOOLEAN_FLAGS.has(arg)) {
      if (inline !== undefined) throw new UsageError(`${arg} takes no value`);
      flags.add(arg);
      continue;
    }
    if (!VALUE_FLAGS.has(arg)) throw new UsageError(`unknown option ${JSON.stringify(arg)}\n${USAGE}`);
    const value = inline ?? rest[++i];
    if (value === undefined) throw new UsageError(`${arg} needs a value`);
    const key = arg === '--prompt' ? '-p' : arg;
    if (values.has(key)) throw new UsageError(`${arg} given more than once (one -p is one query)`);
    values.set(key, value);
  }
  const outputFormat = (values.get('--output-format') ?? 'text') as OutputFormat;
  if (!['stream-json', 'json', 'text'].includes(outputFormat)) throw new UsageError(`--output-format must be stream-json, json or text (got ${JSON.stringify(outputFormat)})`);
  const inputFormat = (values.get('--input-format') ?? 'text') as InputFormat;
  if (!['ndjson', 'text'].includes(inputFormat)) throw new UsageError(`--input-format must be ndjson or text (got ${JSON.stringify(inputFormat)})`);
  if (inputFormat === 'ndjson') {
    for (const f of ['--cc-compat', '--bg']) if (flags.has(f)) throw new UsageError(`${f} cannot be combined with --input-format ndjson (the control channel needs this process in the foreground speaking stream-json)`);
    if (outputFormat !== 'stream-json') {
      throw new UsageError(`--input-format ndjson needs --output-format stream-json (control responses share stdout with events; ${outputFormat} output is aggregated)`);
    }
  } else {
    for (const f of ['--cc-compat', '--bg']) if (flags.has(f)) throw new UsageError(`${f} is not supported by this CLI`);
  }
  const prompt = values.get('-p');
  if (prompt === undefined) throw new UsageError('-p "<prompt>" is required: it is the one query of this run');
  if (prompt.trim() === '') throw new UsageError('-p must not be empty');
  const url = values.get('--url');
  if (!url) throw new UsageError('--url ws://HOST:PORT/ahp is required');
  if (!/^wss?:\/\//.test(url)) throw new UsageError(`--url must be a ws:// or wss:// URL (got ${JSON.stringify(url)})`);
  const rawSession = values.get('--session');
  if (!rawSession) throw new UsageError('--session <id> is required');
  const session = asSessionUri(rawSession);
  if (session.length <= SESSION_SCHEME.length) throw new UsageError('--session must not be empty');
  const token = values.get('--token') ?? env['AHP_TOKEN'];
  return { command: 'run', url, session, prompt, token: token || undefined, outputFormat, inputFormat };
}
