/**
 * A loopback Gemini API for Gemini CLI (`GOOGLE_GEMINI_BASE_URL`), following the shared script
 * (`model-script.ts`): `models/{model}:streamGenerateContent?alt=sse` streams candidates as
 * server-sent events (the tool it asks for is Gemini CLI's `run_shell_command`, as a
 * `functionCall` part); `:generateContent` (side requests such as the next-speaker check) answers
 * one short JSON text; `:countTokens` a fixed count.
 */
import type { ServerResponse } from 'node:http';
import { decideMove, MOCK_USAGE, type ModelScriptOptions, notFound, openEventStream, type ScriptedModel, startLoopbackModel, streamWords } from './model-script.js';

type Part = { text?: string; functionCall?: unknown; functionResponse?: unknown };
type Content = { role?: string; parts?: Part[] };

const usageMetadata = { promptTokenCount: MOCK_USAGE.input, candidatesTokenCount: MOCK_USAGE.output, totalTokenCount: MOCK_USAGE.input + MOCK_USAGE.output };

export async function startMockGemini(options: ModelScriptOptions = {}): Promise<ScriptedModel> {
  const chunk = (res: ServerResponse, parts: Part[], finishReason?: string): void => {
    const candidate = { content: { role: 'model', parts }, index: 0, ...(finishReason ? { finishReason } : {}) };
    if (!res.writableEnded) res.write(`data: ${JSON.stringify({ candidates: [candidate], usageMetadata, modelVersion: 'gemini-mock' })}\r\n\r\n`);
  };

  return startLoopbackModel('', options, (model, held) => async (req, body, res) => {
    const method = /\/models\/[^/:]+:(\w+)/.exec((req.url ?? '').split('?')[0] ?? '')?.[1];
    if (req.method !== 'POST' || method === undefined) return notFound(res);
    const parsed = JSON.parse(body) as Record<string, unknown>;
    if (method === 'countTokens') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ totalTokens: MOCK_USAGE.input }));
      return;
    }
    model.requests.push(parsed);
    if (method === 'generateContent') {
      // Side requests (next-speaker check, summaries): one short JSON text.
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: '{"next_speaker":"user","reasoning":"done"}' }] }, finishReason: 'STOP', index: 0 }], usageMetadata }));
      return;
    }
    if (method !== 'streamGenerateContent') return notFound(res);
    const contents = (parsed['contents'] as Content[] | undefined) ?? [];
    const last = contents[contents.length - 1];
    const parts = last?.parts ?? [];
    const tools = (parsed['tools'] as Array<{ functionDeclarations?: unknown[] }> | undefined) ?? [];
    const move = decideMove(
      {
        toolsOffered: tools.some((t) => (t.functionDeclarations?.length ?? 0) > 0),
        lastIsUserText: last?.role === 'user' && !parts.some((p) => p.functionResponse !== undefined),
        lastText: parts.map((p) => p.text ?? '').join('\n'),
      },
      model.command,
    );
    openEventStream(res);
    if (move.kind === 'tool') {
      chunk(res, [{ text: move.preamble }]);
      chunk(res, [{ functionCall: { name: 'run_shell_command', args: { command: move.command, description: 'Create the marker file' } } }], 'STOP');
    } else {
      await streamWords(model, held, model.answer, (w) => chunk(res, [{ text: w }]));
      chunk(res, [{ text: '' }], 'STOP');
    }
    if (!res.writableEnded) res.end();
  });
}
