/**
 * Character-level merge of one text answer across nodes: two people on two nodes type into the
 * same question at the same time, and every character survives on every node and in the log.
 * Each node's Y.Doc of the request shares one Yjs history (the collab log in PostgreSQL), so
 * concurrent inserts merge as Yjs merges them; before, each node had its own document and folded
 * the other node's drafts over its text, so whichever draft landed last deleted the other's typing.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { RpcClient } from '../helpers/rpc-client.js';
import { startScriptTurn } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait-for.js';
import { Peer } from '../helpers/yjs-peer.js';
import { clusterPerFile, subscribeWhenKnown } from './cluster.js';

const KEYSTROKES = 200;
const REQUEST = { id: 'req-merge', message: 'Write it together', questions: [{ id: 'notes', kind: 'text', message: 'Notes', required: true, max: 2_000 }] };

/** 200 keystrokes of one person: lower case for one, upper case for the other, so both can be told apart. */
function keystrokes(alphabet: string): string {
  let s = '';
  for (let i = 0; i < KEYSTROKES; i++) s += alphabet[i % alphabet.length];
  return s;
}

async function lastDraftInLog(storeUrl: string, channel: string): Promise<unknown> {
  const db = new pg.Client({ connectionString: storeUrl });
  await db.connect();
  try {
    const rows = await db.query<{ value: unknown }>(
      `SELECT action::json->'answer'->'value'->>'value' AS value FROM ahp_records
       WHERE channel = $1 AND action::json->>'type' = 'chat/inputAnswerChanged' AND action::json->>'questionId' = 'notes'
       ORDER BY seq DESC LIMIT 1`,
      [channel],
    );
    return rows.rows[0]?.value;
  } finally {
    await db.end();
  }
}

describe('text merge across nodes', () => {
  const peers: Peer[] = [];
  const fx = clusterPerFile(2);
  afterAll(() => {
    for (const p of peers.splice(0)) p.destroy();
  });

  it('two people on two nodes type 200 keystrokes each, interleaved: all 400 characters survive, equal on every node and in the log', async () => {
    const [n1, n2] = fx.cluster.nodes;
    const alice = await RpcClient.open(n1!.wsUrl);
    const bob = await RpcClient.open(n2!.wsUrl);
    fx.clients.push(alice, bob);
    const { chat } = await alice.createSession('merge');
    await alice.subscribe(chat);
    await subscribeWhenKnown(bob, chat);
    await startScriptTurn(alice, chat, [{ ask: REQUEST }]);
    await bob.waitForEnvelope((e) => e.action.type === 'chat/inputRequested', 'input request on node 2');

    const a = await Peer.join(alice, chat, REQUEST.id);
    const b = await Peer.join(bob, chat, REQUEST.id);
    peers.push(a, b);
    const typedByAlice = keystrokes('abcdefghijklmnopqrstuvwxyz');
    const typedByBob = keystrokes('ABCDEFGHIJKLMNOPQRSTUVWXYZ');
    // Each types at the end of the text as they see it; between keystrokes both sockets are read,
    // so each person's next insert lands among what the other typed so far.
    for (let i = 0; i < KEYSTROKES; i++) {
      a.text('notes').insert(a.text('notes').length, typedByAlice[i]!);
      b.text('notes').insert(b.text('notes').length, typedByBob[i]!);
      await new Promise((resolve) => setImmediate(resolve));
    }

    const merged = await waitFor(
      () => {
        const ta = a.text('notes').toString();
        return ta.length === 2 * KEYSTROKES && ta === b.text('notes').toString() ? ta : undefined;
      },
      { what: 'both people to see the same 400 characters', timeoutMs: 30_000 },
    );
    // Every keystroke is there, each person's in the order typed.
    expect(merged.replace(/[^a-z]/g, '')).toBe(typedByAlice);
    expect(merged.replace(/[^A-Z]/g, '')).toBe(typedByBob);

    // Every node's document holds it: a newcomer joining on each node receives exactly that text.
    for (const node of [n1!, n2!]) {
      const viewer = await RpcClient.open(node.wsUrl);
      fx.clients.push(viewer);
      await viewer.subscribe(chat);
      const fresh = await Peer.join(viewer, chat, REQUEST.id);
      peers.push(fresh);
      expect(fresh.text('notes').toString()).toBe(merged);
    }
    // The AHP draft on every node, and the newest draft in the shared log, are the merged text.
    const draftOn = async (c: RpcClient): Promise<unknown> => {
      const snap = await c.subscribe<{ activeTurn?: { responseParts: Array<{ kind: string; request?: { answers?: Record<string, { value?: { value?: unknown } }> } }> } }>(chat);
      return snap.state.activeTurn?.responseParts.find((p) => p.kind === 'inputRequest')?.request?.answers?.['notes']?.value?.value;
    };
    await waitFor(async () => ((await lastDraftInLog(fx.cluster.storeUrl, chat)) === merged ? true : undefined), { what: 'the newest draft in the log to be the merged text', timeoutMs: 15_000 });
    await waitFor(async () => ((await draftOn(alice)) === merged && (await draftOn(bob)) === merged ? true : undefined), { what: 'the draft on both nodes to be the merged text', timeoutMs: 15_000 });
  }, 90_000);
});
