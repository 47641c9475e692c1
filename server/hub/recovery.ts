/**
 * Recovery: how a hub process gets back exactly the state it had.
 *
 * The newest snapshot (the `HubState` image and the duplicate ledger) is loaded, then every record
 * after it is applied through `HubState.applyRecord`, the same fold the live hub uses. Roll-up
 * actions are records too, so nothing is recomputed here. The records also rebuild the ledger
 * (a client dispatch's stored origin names its actor) and refill the replay window, so a client
 * that reconnects right after a restart can still get a replay instead of snapshots.
 *
 * Turns that were running when the previous process stopped are listed by `interruptedTurns`
 * (on a log of the hub's own only: in cluster mode another process may be running them, see the
 * README's Cluster section). They stay open: the agent runner resumes each whose agent can carry
 * on and ends the others with a `chat/error` that says so (docs/continuity.md, "Turns").
 *
 * The snapshot image is defined here too (`snapshotImageOf`), next to the code that reads it.
 */
import { initialRootState } from '../../shared/protocol/state.js';
import type { AgentInfo } from '../agents/agent.js';
import type { ActionLog } from '../storage/action-log.js';
import { CATALOGUE_CHANNEL, HubState, type CatalogueImage } from './catalogue.js';
import { ClientLedger, type LedgerImage, type LedgerLimits } from './client-ledger.js';
import { envelopeOf } from './commit-pipeline.js';
import type { ReplayWindow } from './replay-window.js';
import { defaultMaxLoadStateChars, LoadGuard, type MeasuredChannel } from './load-guard.js';

/** What a log snapshot stores besides the records: everything recovery cannot fold cheaply. */
export interface SnapshotImage {
  /** The catalogue (the key keeps the older spelling: snapshots in every log hold it). */
  readonly catalog: CatalogueImage;
  /** Absent in snapshots written before the ledger existed. */
  readonly ledger?: LedgerImage;
}

export function snapshotImageOf(state: HubState, ledger: ClientLedger): SnapshotImage {
  return { catalog: state.toImage(), ledger: ledger.toImage() };
}

export interface RecoveredHub {
  readonly state: HubState;
  readonly ledger: ClientLedger;
  /** The log's head: the last serverSeq in the log (sequencing continues after it). */
  readonly headSeq: number;
  /** Channels measured while loading (load-guard.ts), so the state budget need not measure them again. */
  readonly measured?: ReadonlyMap<string, MeasuredChannel>;
}

/** Records read per page while replaying. */
const REPLAY_PAGE = 2_000;

/**
 * Loads the newest snapshot and replays the records after it; `replay` (when given) gets the
 * envelope of every replayed record clients can see. `agents` is configuration, not history: a
 * restart with another agents file lists what runs now.
 */
export async function recoverFromLog(
  log: ActionLog,
  agents: readonly AgentInfo[],
  replay?: ReplayWindow,
  ledgerOptions?: { readonly now: () => number; readonly ledger: LedgerLimits },
  maxLoadStateChars: number = defaultMaxLoadStateChars(),
): Promise<RecoveredHub> {
  // The head is read FIRST: with a shared log other processes append while this one replays, and
  // a head read after the replay could name records the replay never saw (the hub would then
  // continue after them, missing them for good, and snapshot that hole). Read first, it is a
  // floor the replay must reach.
  const headBefore = await log.head();
  const snapshot = await log.latestSnapshot();
  const image = snapshot?.data as SnapshotImage | undefined;
  const state = image ? HubState.fromImage(image.catalog) : new HubState(initialRootState(agents.map((a) => ({ ...a }))));
  state.root = { ...state.root, agents: agents.map((a) => ({ ...a })) };
  const ledger = ClientLedger.fromImage(image?.ledger, ledgerOptions?.now, ledgerOptions?.ledger);
  // Refuses, with a message saying what to do, a log this process could not hold (load-guard.ts).
  const guard = new LoadGuard(state, maxLoadStateChars);
  let seq = snapshot?.serverSeq ?? 0;
  for (;;) {
    const records = await log.read(seq, REPLAY_PAGE);
    for (const r of records) {
      state.applyRecord(r);
      guard.replayed(r.action);
      ledger.acceptedFromLog(r);
      if (replay && r.channel !== CATALOGUE_CHANNEL) replay.keep(envelopeOf(r));
      seq = r.serverSeq;
    }
    if (records.length < REPLAY_PAGE) break;
  }
  guard.finish();
  if (seq < headBefore) {
    // Only when the records between the snapshot and the head are gone (damaged or compacted
    // past the newest snapshot): state would silently miss them.
    throw new Error(`recovery: the log's head is ${headBefore} but its records end at ${seq}; records after the newest snapshot are missing`);
  }
  return { state, ledger, headSeq: seq, measured: guard.measured };
}

/** A turn that was running when the previous process stopped. */
export interface InterruptedTurn {
  readonly chat: string;
  readonly turnId: string;
}

/** Every turn still running in the recovered `state`. */
export function interruptedTurns(state: HubState): InterruptedTurn[] {
  const turns: InterruptedTurn[] = [];
  for (const chat of state.chats.values()) if (chat.state.activeTurn) turns.push({ chat: chat.uri, turnId: chat.state.activeTurn.id });
  return turns;
}
