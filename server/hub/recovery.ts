/**
 * Recovery: how a hub process gets back exactly the state it had.
 *
 * The newest snapshot (the `HubState` image and the duplicate ledger) is loaded, then every record
 * after it is applied through `HubState.applyRecord`, the same fold the live hub uses. Roll-up
 * actions are records too, so nothing is recomputed here. The records also rebuild the ledger
 * (a client dispatch's stored origin names its actor) and refill the replay window, so a client
 * that reconnects right after a restart can still get a replay instead of snapshots.
 *
 * Turns that were running when the previous process stopped cannot continue: `interruptedTurnEnds`
 * gives, for each, the `chat/error` (`errorType: 'hubRestarted'`) that ends it, never silently.
 * The hub commits those on a log of its own only: in cluster mode another process may be running
 * the turns (see the README's Cluster section for what ends them there).
 *
 * The snapshot image is defined here too (`snapshotImageOf`), next to the code that reads it.
 */
import type { ErrorAction } from '../../shared/protocol/actions.js';
import { initialRootState } from '../../shared/protocol/state.js';
import { turnDuration } from '../../shared/state/selectors.js';
import type { AgentInfo } from '../agents/agent.js';
import type { ActionLog } from '../storage/action-log.js';
import { CATALOG_CHANNEL, HubState, type CatalogImage } from './catalog.js';
import { ClientLedger, type LedgerImage, type LedgerLimits } from './client-ledger.js';
import { envelopeOf } from './commit-pipeline.js';
import type { ReplayWindow } from './replay-window.js';
import { defaultMaxLoadStateChars, LoadGuard, type MeasuredChannel } from './load-guard.js';

/** What a log snapshot stores besides the records: everything recovery cannot fold cheaply. */
export interface SnapshotImage {
  readonly catalog: CatalogImage;
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
      if (replay && r.channel !== CATALOG_CHANNEL) replay.keep(envelopeOf(r));
      seq = r.serverSeq;
    }
    if (records.length < REPLAY_PAGE) break;
  }
  guard.finish();
  // The head may be past the last readable record (compaction never moves it back).
  return { state, ledger, headSeq: Math.max(seq, await log.head()), measured: guard.measured };
}

/** The action that ends each turn still running in `state`, as an error the user can see. */
export function interruptedTurnEnds(state: HubState, now: () => number): Array<{ readonly chat: string; readonly action: ErrorAction }> {
  const ends: Array<{ chat: string; action: ErrorAction }> = [];
  for (const chat of state.chats.values()) {
    const turn = chat.state.activeTurn;
    if (!turn) continue;
    ends.push({
      chat: chat.uri,
      action: {
        type: 'chat/error',
        turnId: turn.id,
        duration: turnDuration(turn.startedAt, now()),
        error: { errorType: 'hubRestarted', message: 'The hub restarted while this turn was running; the turn was ended.' },
      },
    });
  }
  return ends;
}
