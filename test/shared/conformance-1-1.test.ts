/**
 * Upstream AHP 1.1 round-trip fixtures (copied data, see round-trips-1.1/README.md): each is
 * decoded with the hub's zod schema for its wire type and re-encoded, like the 0.8 set in
 * conformance.test.ts. The decoders are the schemas the hub parses and answers with.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAction } from '../../shared/protocol/actions.js';
import {
  channelCreditParamsSchema,
  channelFrameParamsSchema,
  channelReconnectResultSchema,
  initializeResult11Schema,
  reconnect11ParamsSchema,
  subscribeParams11Schema,
  subscribeResult11Schema,
  windowedReconnectResultSchema,
} from '../../shared/protocol/messages-1-1.js';
import { chatStateSchema, sessionSummarySchema } from '../../shared/protocol/state.js';

const DIR = fileURLToPath(new URL('../fixtures/ahp-conformance/round-trips-1.1', import.meta.url));

interface RoundTripFixture {
  readonly type: string;
  readonly input: unknown;
  readonly acceptableOutputs: readonly unknown[];
  readonly preservedOutput?: unknown;
}

function strictActions(envelopes: ReadonlyArray<{ action: unknown }>): void {
  for (const e of envelopes) {
    const parsed = parseAction(e.action);
    if (!parsed.ok) throw new Error(parsed.message);
  }
}

const DECODERS: Readonly<Record<string, (input: unknown) => unknown>> = {
  ReconnectParams: (input) => reconnect11ParamsSchema.parse(input),
  ReconnectResult: (input) => {
    if (typeof input === 'object' && input !== null && 'channels' in input) {
      const result = channelReconnectResultSchema.parse(input);
      for (const c of result.channels) if (c.kind === 'replay') strictActions(c.actions);
      return result;
    }
    return windowedReconnectResultSchema.parse(input);
  },
  InitializeResult: (input) => {
    const result = initializeResult11Schema.parse(input);
    // The steering list must hold as chat state too, beside the legacy single slot.
    for (const s of result.snapshots) chatStateSchema.parse(s.state);
    return result;
  },
  SubscribeParams: (input) => subscribeParams11Schema.parse(input),
  SubscribeResult: (input) => subscribeResult11Schema.parse(input),
  SessionSummary: (input) => sessionSummarySchema.parse(input),
  ChannelFrameParams: (input) => channelFrameParamsSchema.parse(input),
  ChannelCreditParams: (input) => channelCreditParamsSchema.parse(input),
};

const files = readdirSync(DIR)
  .filter((name) => name.endsWith('.json'))
  .sort();

describe('AHP 1.1 round-trip fixtures', () => {
  it('finds the copied set', () => {
    expect(files).toHaveLength(14);
  });

  it.each(files)('%s', (file) => {
    const fixture = JSON.parse(readFileSync(join(DIR, file), 'utf8')) as RoundTripFixture;
    const decode = DECODERS[fixture.type];
    expect(decode, `no decoder for wire type ${fixture.type}`).toBeDefined();
    const expected = fixture.preservedOutput ?? fixture.acceptableOutputs[0];
    const reencoded: unknown = JSON.parse(JSON.stringify(decode!(JSON.parse(JSON.stringify(fixture.input)))));
    expect(reencoded).toStrictEqual(expected);
  });

  it('keeps an artifact of an unknown type verbatim, and refuses a malformed one', () => {
    const summary = { resource: 'ahp-session:/s1', provider: 'demo', title: 't', status: 1, modifiedAt: '2024-01-01T00:00:00.000Z' };
    expect(sessionSummarySchema.safeParse({ ...summary, artifacts: [{ type: 'x-new', opaque: [1] }] }).success).toBe(true);
    expect(sessionSummarySchema.safeParse({ ...summary, artifacts: [{ label: 'no type' }] }).success).toBe(false);
  });
});
