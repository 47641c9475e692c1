/**
 * A loopback OpenAI-compatible model for tests that run a real agent (Qwen Code): streamed chat
 * completions. A conversation whose last message is the user's asks for one shell tool call
 * (unless the user wrote `[no-tools]`); once a tool result is in the conversation it answers in text. Text is streamed in small chunks, and a
 * test can hold the stream open (`holdText`) to cancel or kill the agent mid-stream.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MockModelOptions {
  /** The shell command the model asks to run. */
  readonly command?: string;
  /** The final answer, streamed after the tool result arrives. */
  readonly answer?: string;
}

export interface MockModel {
  readonly baseUrl: string;
  /** Chat-completion requests received, in order (parsed bodies). */
  readonly requests: Array<Record<string, unknown>>;
  /** While set, text streams send their first `holdAfterWords` words and then wait until `release()`. */
  holdText: boolean;
  /** Words streamed before a held text stream waits (default 1). */
  holdAfterWords: number;
  /** The text answer streamed next (settable per turn). */
  answer: string;
  release(): void;
  close(): Promise<void>;
}

type ChatMessage = { role?: string; content?: unknown; tool_calls?: unknown };

export async function startMockModel(options: MockModelOptions = {}): Promise<MockModel> {
  const command = options.command ?? 'touch hub-acp-test.txt';
  const requests: Array<Record<string, unknown>> = [];
  const held = new Set<() => void>();
  let toolCalls = 0;
  const sockets = new Set<import('node:net').Socket>();

  const sse = (res: ServerResponse, chunk: Record<string, unknown>): void => {
    if (!res.writableEnded) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  };
  const frame = (delta: Record<string, unknown>, finish: string | null = null): Record<string, unknown> => ({
    id: 'chatcmpl-mock',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'mock-model',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const usage = { prompt_tokens: 120, completion_tokens: 24, total_tokens: 144 };

  const streamText = async (res: ServerResponse, text: string): Promise<void> => {
    const words = text.split(/(?<= )/);
    const before = model.holdText ? Math.max(1, model.holdAfterWords) : words.length;
    sse(res, frame({ role: 'assistant', content: words[0] ?? '' }));
    for (const w of words.slice(1, before)) sse(res, frame({ content: w }));
    if (model.holdText) await new Promise<void>((resolve) => held.add(resolve));
    for (const w of words.slice(before)) sse(res, frame({ content: w }));
    sse(res, frame({}, 'stop'));
    sse(res, { ...frame({}), choices: [], usage });
    if (!res.writableEnded) res.end('data: [DONE]\n\n');
  };

  const streamToolCall = (res: ServerResponse): void => {
    toolCalls += 1;
    const id = `call_${toolCalls}`;
    sse(res, frame({ role: 'assistant', content: 'Let me run a command first. ' }));
    sse(res, frame({ tool_calls: [{ index: 0, id, type: 'function', function: { name: 'run_shell_command', arguments: '' } }] }));
    const args = JSON.stringify({ command, description: 'Print a greeting' });
    sse(res, frame({ tool_calls: [{ index: 0, function: { arguments: args.slice(0, 10) } }] }));
    sse(res, frame({ tool_calls: [{ index: 0, function: { arguments: args.slice(10) } }] }));
    sse(res, frame({}, 'tool_calls'));
    sse(res, { ...frame({}), choices: [], usage });
    res.end('data: [DONE]\n\n');
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    let body = '';
    for await (const chunk of req) body += String(chunk);
    if (req.method !== 'POST' || !/chat\/completions$/.test(req.url ?? '')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }));
      return;
    }
    const parsed = JSON.parse(body) as Record<string, unknown>;
    requests.push(parsed);
    const messages = (parsed['messages'] as ChatMessage[] | undefined) ?? [];
    const last = messages[messages.length - 1];
    const wantsTool =
      Array.isArray(parsed['tools']) && (parsed['tools'] as unknown[]).length > 0 && last?.role === 'user' && !JSON.stringify(last.content ?? '').includes('[no-tools]');
    if (parsed['stream'] !== true) {
      // Side requests (titles, summaries, next-speaker checks): a short JSON answer.
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'chatcmpl-mock',
          object: 'chat.completion',
          created: 1_700_000_000,
          model: 'mock-model',
          choices: [{ index: 0, message: { role: 'assistant', content: '{"next_speaker":"user","reasoning":"done"}' }, finish_reason: 'stop' }],
          usage,
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    if (wantsTool) streamToolCall(res);
    else await streamText(res, model.answer);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
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
  const model: MockModel = {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    holdText: false,
    holdAfterWords: 1,
    answer: options.answer ?? 'The command ran and printed hello-from-shell. All done.',
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
  return model;
}
