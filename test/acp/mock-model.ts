/**
 * A loopback OpenAI-compatible model for tests that run a real agent (Qwen Code): streamed chat
 * completions following the shared script (`model-script.ts`): a conversation whose last message
 * is the user's asks for one shell tool call (Qwen Code's `run_shell_command`, or `toolName`:
 * OpenCode's `bash`) unless the user wrote `[no-tools]`; once a tool result is in the conversation it answers in text. Text is streamed in small chunks,
 * and a test can hold the stream open (`holdText`) to cancel or kill the agent mid-stream.
 */
import type { ServerResponse } from 'node:http';
import { decideMove, MOCK_USAGE, type ModelScriptOptions, notFound, openEventStream, type ScriptedModel, startLoopbackModel, streamWords } from './model-script.js';

export interface MockModelOptions extends ModelScriptOptions {
  /** The shell tool the model calls: Qwen Code's `run_shell_command` (the default), OpenCode's `bash`. */
  readonly toolName?: string;
}
export type MockModel = ScriptedModel;

type ChatMessage = { role?: string; content?: unknown; tool_calls?: unknown };

export async function startMockModel(options: MockModelOptions = {}): Promise<MockModel> {
  let toolCalls = 0;
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
  const usage = { prompt_tokens: MOCK_USAGE.input, completion_tokens: MOCK_USAGE.output, total_tokens: MOCK_USAGE.input + MOCK_USAGE.output };

  return startLoopbackModel('/v1', options, (model, held) => async (req, body, res) => {
    if (req.method !== 'POST' || !/chat\/completions$/.test(req.url ?? '')) return notFound(res);
    const parsed = JSON.parse(body) as Record<string, unknown>;
    model.requests.push(parsed);
    const messages = (parsed['messages'] as ChatMessage[] | undefined) ?? [];
    const last = messages[messages.length - 1];
    const move = decideMove({ toolsOffered: Array.isArray(parsed['tools']) && (parsed['tools'] as unknown[]).length > 0, lastIsUserText: last?.role === 'user', lastText: JSON.stringify(last?.content ?? '') }, model.command);
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
    openEventStream(res);
    if (move.kind === 'tool') {
      toolCalls += 1;
      sse(res, frame({ role: 'assistant', content: move.preamble }));
      sse(res, frame({ tool_calls: [{ index: 0, id: `call_${toolCalls}`, type: 'function', function: { name: options.toolName ?? 'run_shell_command', arguments: '' } }] }));
      const args = JSON.stringify({ command: move.command, description: 'Print a greeting' });
      sse(res, frame({ tool_calls: [{ index: 0, function: { arguments: args.slice(0, 10) } }] }));
      sse(res, frame({ tool_calls: [{ index: 0, function: { arguments: args.slice(10) } }] }));
      sse(res, frame({}, 'tool_calls'));
    } else {
      await streamWords(model, held, model.answer, (w, first) => sse(res, frame(first ? { role: 'assistant', content: w } : { content: w })));
      sse(res, frame({}, 'stop'));
    }
    sse(res, { ...frame({}), choices: [], usage });
    if (!res.writableEnded) res.end('data: [DONE]\n\n');
  });
}
