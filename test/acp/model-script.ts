/**
 * The one script every loopback mock model follows (OpenAI-compatible for Qwen Code, Anthropic
 * Messages for Claude Code, Gemini for Gemini CLI), so one scenario drives all three agents:
 * a conversation whose last message is the user's own text asks for one shell command (unless the
 * user wrote `[no-tools]`); once a tool result is in the conversation the model answers in text.
 * Each mock only translates its API's request into a `ConversationView` and the `ModelMove` back
 * into its wire format. The loopback HTTP server they share lives here too.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface ModelScriptOptions {
  /** The shell command the model asks to run. */
  readonly command?: string;
  /** The final answer, streamed after the tool result arrives. */
  readonly answer?: string;
}

/** The shared knobs every mock model exposes to tests. */
export interface ScriptedModel {
  readonly baseUrl: string;
  /** Requests received, in order (parsed bodies). */
  readonly requests: Array<Record<string, unknown>>;
  /** While set, text streams send their first `holdAfterWords` words and then wait until `release()`. */
  holdText: boolean;
  /** Words streamed before a held text stream waits (default 1). */
  holdAfterWords: number;
  /** The text answer streamed next (settable per turn). */
  answer: string;
  /** The shell command the model asks for. */
  readonly command: string;
  release(): void;
  close(): Promise<void>;
}

/** What a mock reads from its API's request body. */
export interface ConversationView {
  /** The request offers the model tools (the agent's main loop, not a side request). */
  readonly toolsOffered: boolean;
  /** The last message is the user's own text, not a tool result. */
  readonly lastIsUserText: boolean;
  /** The text of that last message (to find `[no-tools]`). */
  readonly lastText: string;
}

/** The text the model says before it asks for the tool. */
export const TOOL_PREAMBLE = 'Let me run a command first. ';
export const DEFAULT_COMMAND = 'touch hub-acp-test.txt';
export const DEFAULT_ANSWER = 'The command ran and printed hello-from-shell. All done.';
/** Token counts every mock reports for every answer. */
export const MOCK_USAGE = { input: 120, output: 24 } as const;

export type ModelMove = { readonly kind: 'tool'; readonly preamble: string; readonly command: string } | { readonly kind: 'text' };

export function decideMove(view: ConversationView, command: string): ModelMove {
  if (view.toolsOffered && view.lastIsUserText && !view.lastText.includes('[no-tools]')) return { kind: 'tool', preamble: TOOL_PREAMBLE, command };
  return { kind: 'text' };
}

/**
 * Streams `text` word by word through `send`, honouring `holdText`: the held part waits for
 * `release()` (or the model's close).
 */
export async function streamWords(model: ScriptedModel, held: Set<() => void>, text: string, send: (word: string, first: boolean) => void): Promise<void> {
  const words = text.split(/(?<= )/);
  const before = model.holdText ? Math.max(1, model.holdAfterWords) : words.length;
  for (const [i, w] of words.slice(0, before).entries()) send(w, i === 0);
  if (model.holdText) await new Promise<void>((resolve) => held.add(resolve));
  for (const w of words.slice(before)) send(w, false);
}

export type MockHandler = (req: IncomingMessage, body: string, res: ServerResponse, held: Set<() => void>) => Promise<void>;

/**
 * A 127.0.0.1 HTTP server on port 0 running `handle` for each request; `close()` releases held
 * streams and destroys open sockets (agents keep connections alive).
 */
export async function startLoopbackModel(basePath: string, options: ModelScriptOptions, handle: (model: ScriptedModel, held: Set<() => void>) => MockHandler): Promise<ScriptedModel> {
  const held = new Set<() => void>();
  const sockets = new Set<Socket>();
  let handler: MockHandler | undefined;
  const server: Server = createServer((req, res) => {
    (async () => {
      let body = '';
      for await (const chunk of req) body += String(chunk);
      await handler!(req, body, res, held);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const model: ScriptedModel = {
    baseUrl: `http://127.0.0.1:${port}${basePath}`,
    requests: [],
    holdText: false,
    holdAfterWords: 1,
    answer: options.answer ?? DEFAULT_ANSWER,
    command: options.command ?? DEFAULT_COMMAND,
    release() {
      for (const r of held) r();
      held.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        model.release();
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  handler = handle(model, held);
  return model;
}

export function notFound(res: ServerResponse): void {
  res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
}

export function openEventStream(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
}
