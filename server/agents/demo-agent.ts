/**
 * The built-in `demo` agent. A user message whose text is a JSON object `{"script": [steps]}`
 * runs those steps in order (say, ask, tool, sleep, fail) and completes the turn; any other
 * text gets a short scripted conversation that shows every question kind. Between steps the
 * agent passes a safe input barrier, where steering inputs added to the running turn are taken.
 */
import { z } from 'zod';
import { chatInputRequestSchema, type ChatInputAnswer, type ChatInputQuestion, type ChatInputRequest } from '../../shared/protocol/state.js';
import { TurnFailure, type AgentProvider, type InputOutcome, type TurnContext, type TurnResult } from './agent.js';

const toolOptionSchema = z.object({
  id: z.string().min(1).max(256),
  label: z.string().min(1).max(256),
  kind: z.enum(['approve', 'deny']),
  group: z.string().max(256).optional(),
});

export const scriptStepSchema = z.union([
  z.object({ say: z.string().max(100_000) }).strict(),
  z.object({ ask: chatInputRequestSchema }).strict(),
  z
    .object({
      tool: z
        .object({
          id: z.string().min(1).max(256),
          name: z.string().min(1).max(256),
          input: z.unknown().optional(),
          confirm: z.boolean().optional(),
          options: z.array(toolOptionSchema).max(16).optional(),
        })
        .strict(),
    })
    .strict(),
  z.object({ sleep: z.number().int().min(0).max(600_000) }).strict(),
  z.object({ fail: z.string().max(10_000) }).strict(),
]);
export type ScriptStep = z.infer<typeof scriptStepSchema>;

export const scriptSchema = z.object({ script: z.array(scriptStepSchema).max(1_000) }).strict();

/** Parses a message as a script: undefined when it is not a script object at all, an error when it is a broken one. */
export function parseScript(text: string): { steps: ScriptStep[] } | { error: string } | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  if (typeof json !== 'object' || json === null || !('script' in json)) return undefined;
  const parsed = scriptSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { error: `invalid script at ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'bad shape'}` };
  }
  return { steps: parsed.data.script };
}

function describeAnswer(answer: ChatInputAnswer, question: ChatInputQuestion | undefined): string {
  if (answer.state === 'skipped') return 'skipped';
  const v = answer.value as { kind: string; value?: unknown; freeformValues?: string[] };
  const options = (question as { options?: Array<{ id: string; label: string }> } | undefined)?.options ?? [];
  const label = (id: unknown): string => options.find((o) => o.id === id)?.label ?? String(id);
  const parts = [v.kind === 'boolean' ? (v.value ? 'Yes' : 'No') : Array.isArray(v.value) ? v.value.map(label).join(', ') : label(v.value)];
  if (v.freeformValues?.length) parts.push(`(other: ${v.freeformValues.join(', ')})`);
  return parts.join(' ');
}

/** The outcome as a person reads it: answers by question title, in the order of the form. */
export function describeOutcome(outcome: InputOutcome, request?: ChatInputRequest): string {
  const lines = [`Input ${outcome.response === 'accept' ? 'accepted' : outcome.response === 'decline' ? 'declined' : 'cancelled'}.`];
  const questions = request?.questions ?? [];
  const known = new Set(questions.map((q) => q.id));
  const ordered: Array<[string, ChatInputQuestion | undefined]> = [
    ...questions.filter((q) => Object.hasOwn(outcome.answers, q.id)).map((q): [string, ChatInputQuestion] => [q.id, q]),
    ...Object.keys(outcome.answers)
      .filter((id) => !known.has(id))
      .map((id): [string, undefined] => [id, undefined]),
  ];
  if (ordered.length > 0) {
    lines.push('', 'Final answers:');
    for (const [id, question] of ordered) lines.push(`- ${question?.title ?? id}: ${describeAnswer(outcome.answers[id]!, question)}`);
  }
  return lines.join('\n');
}

async function runStep(ctx: TurnContext, step: ScriptStep): Promise<void> {
  if ('say' in step) return ctx.say(step.say);
  if ('ask' in step) return ctx.say(describeOutcome(await ctx.requestInput(step.ask as ChatInputRequest), step.ask as ChatInputRequest));
  if ('sleep' in step) return ctx.sleep(step.sleep);
  if ('fail' in step) throw new TurnFailure(step.fail, 'scriptFailure');
  const tool = step.tool;
  const outcome = await ctx.runTool({
    id: tool.id,
    name: tool.name,
    input: tool.input,
    confirm: tool.confirm ?? false,
    ...(tool.options ? { options: tool.options } : {}),
  });
  if (!outcome.approved) await ctx.say(`Tool ${tool.name} was not run (${outcome.state.status}).`);
}

/** Takes steering inputs at the barrier between steps and acknowledges them in the stream. */
async function passBarrier(ctx: TurnContext): Promise<void> {
  const inputs = await ctx.barrier();
  for (const input of inputs) await ctx.say(`Taking your addition into account: “${input.text}”`);
}

function demoSteps(turnId: string): ScriptStep[] {
  const id = (s: string): string => `${turnId}-${s}`;
  return [
    { say: 'Hi! I am the demo agent. I will ask a few questions that show every kind of input this hub supports.' },
    {
      ask: {
        id: id('profile'),
        message: 'Tell me about the project',
        questions: [
          { id: 'name', kind: 'text', title: 'Project name', message: 'What is the project called?', required: true, min: 2, max: 80 },
          { id: 'contact', kind: 'text', title: 'Contact', message: 'Who should I contact?', format: 'email' },
          { id: 'budget', kind: 'number', title: 'Budget', message: 'Budget in euros', min: 0, defaultValue: 1000 },
          { id: 'people', kind: 'integer', title: 'Team size', message: 'How many people?', min: 1, max: 500 },
          { id: 'public', kind: 'boolean', title: 'Public', message: 'Is it open source?', defaultValue: true },
          {
            id: 'runtime',
            kind: 'single-select',
            title: 'Runtime',
            message: 'Which runtime?',
            required: true,
            allowFreeformInput: true,
            options: [
              { id: 'node', label: 'Node.js', recommended: true },
              { id: 'deno', label: 'Deno' },
              { id: 'bun', label: 'Bun' },
            ],
          },
          {
            id: 'targets',
            kind: 'multi-select',
            title: 'Targets',
            message: 'Where will it run?',
            min: 1,
            max: 3,
            options: [
              { id: 'linux', label: 'Linux' },
              { id: 'mac', label: 'macOS' },
              { id: 'windows', label: 'Windows' },
              { id: 'browser', label: 'Browser' },
            ],
          },
        ],
      },
    },
    { ask: { id: id('review'), message: 'Please review the contributing guide, then mark this done.', url: 'https://example.com/contributing' } },
    { tool: { id: id('tool'), name: 'write_file', input: { path: 'README.md' }, confirm: true } },
    { say: 'That is the whole tour. Send `{"script": [...]}` to drive me step by step.' },
  ] as ScriptStep[];
}

export const demoAgent: AgentProvider = {
  info: { provider: 'demo', displayName: 'Demo agent', description: 'Scripted agent that shows every AHP input kind' },
  // Its steps follow from the message and the turn id alone: after a restart it runs them again
  // and the runner matches each against the log, so the turn carries on where it was.
  afterHubRestart: 'replay',
  async runTurn(ctx: TurnContext): Promise<TurnResult> {
    const script = parseScript(ctx.message.text);
    if (script && 'error' in script) throw new TurnFailure(script.error, 'invalidScript');
    const steps = script ? script.steps : demoSteps(ctx.turnId);
    for (const step of steps) {
      await passBarrier(ctx);
      await runStep(ctx, step);
    }
    await passBarrier(ctx);
    return 'complete';
  },
};

/**
 * Sessions whose agent connects remotely (over the WebSocket with an agent token): the hub runs
 * nothing and the remote agent ends the turn itself.
 */
export const remoteAgent: AgentProvider = {
  info: { provider: 'remote', displayName: 'Remote agent', description: 'An agent that connects with an agent token and drives turns itself' },
  afterHubRestart: 'reconnect',
  async runTurn(): Promise<TurnResult> {
    return 'external';
  },
};
