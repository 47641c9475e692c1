/**
 * The way a member's text leaves the process: into the log first. A room's text is mirrored into
 * the AHP draft (`chat/inputAnswerChanged`, through `hub.submitAs`) `mirrorDelayMs` after a
 * member's edit, as the member who edited last; the Yjs updates members made meanwhile are held
 * by their room (`CollabRoom.heldMark`) and go to the other members only in the delivered phase
 * of the commit that put that text into the log: the mirror's last draft registers the release on
 * its commit (`CommitEvent.afterAppend`), so the pipeline sends them right after the append,
 * never when it failed. A pass with nothing to write (the state has that text already) releases
 * once everything sequenced so far is durable (`hub.drain`). A draft the hub refuses (the request was answered meanwhile, a budget) cannot make the
 * text durable: its frames go out anyway, since the room is about to end or stays as it is; a
 * draft that failed (storage away) keeps them held and is tried again.
 *
 * Drafts in flight are remembered (room, question → values), so their own commits are not merged
 * back into the text: those commits reach the engine in the delivered phase, when members may
 * have typed more, and merging that older draft back would delete what they typed since.
 */
import type { WireAction } from '../../shared/protocol/messages.js';
import type { ChatInputRequest, ChatState } from '../../shared/protocol/state.js';
import { findOpenInputRequest } from '../../shared/state/selectors.js';
import type { Principal } from '../auth/auth.js';
import type { CommitEvent, HubPort } from '../hub/hub-port.js';
import type { Logger } from '../log.js';
import { errorFields } from '../log.js';
import type { CollabRoom } from './collab-room.js';

/** The open input request `requestId` of a chat (undefined when the chat is gone). */
export function openRequest(chat: ChatState | undefined, requestId: string): ChatInputRequest | undefined {
  return chat && findOpenInputRequest(chat, requestId)?.request;
}

/** One question's drafts: its room and question id. */
function draftKey(channel: string, requestId: string, questionId: string): string {
  return `${channel}\u0000${requestId}\u0000${questionId}`;
}

/** The text a committed draft holds ('' for a cleared one), or undefined when it is not text. */
function draftTextOf(answer: { state?: string; value?: { kind?: string; value?: unknown } } | undefined): string | undefined {
  if (answer === undefined) return '';
  return answer.value?.kind === 'text' && typeof answer.value.value === 'string' ? answer.value.value : undefined;
}

export class DraftMirror {
  /** Per room: question id → who edited last, waiting to be mirrored. */
  readonly #dirty = new Map<CollabRoom, Map<string, Principal>>();
  readonly #timers = new Map<CollabRoom, NodeJS.Timeout>();
  /** Drafts being written, per `draftKey` (see the file header). */
  readonly #inFlight = new Map<string, string[]>();
  /** Drafts whose commit releases their room's held frames up to `mark`, per `draftKey` + value. */
  readonly #releasing = new Map<string, { readonly room: CollabRoom; readonly mark: number }>();
  #closing = false;

  constructor(
    private readonly hub: HubPort,
    private readonly logger: Logger,
    private readonly delayMs: number,
  ) {}

  /** A member changed the room (`questionId`: the text it edited, if any): mirror it soon. */
  markDirty(room: CollabRoom, questionId: string | undefined, who: Principal | undefined): void {
    let dirty = this.#dirty.get(room);
    if (!dirty) this.#dirty.set(room, (dirty = new Map()));
    if (questionId !== undefined && who !== undefined) dirty.set(questionId, who);
    if (this.#timers.has(room) || this.#closing) return;
    const timer = setTimeout(() => {
      this.#timers.delete(room);
      void this.#mirror(room);
    }, this.delayMs);
    timer.unref?.();
    this.#timers.set(room, timer);
  }

  /** The room is gone: nothing of it is mirrored or released any more. */
  forget(room: CollabRoom): void {
    clearTimeout(this.#timers.get(room));
    this.#timers.delete(room);
    this.#dirty.delete(room);
    for (const [key, r] of this.#releasing) if (r.room === room) this.#releasing.delete(key);
  }

  /** Shutdown: what waits for its mirror is written now (the log is still open); no pass after it. */
  async flush(): Promise<void> {
    this.#closing = true;
    const pending = [...this.#timers.keys()];
    for (const room of pending) clearTimeout(this.#timers.get(room));
    this.#timers.clear();
    await Promise.all(pending.map((room) => this.#mirror(room)));
  }

  /** True when this committed draft is one the mirror wrote (taken: it is not merged back). */
  takeInFlight(room: CollabRoom, questionId: string, value: string): boolean {
    const key = draftKey(room.channel, room.requestId, questionId);
    const values = this.#inFlight.get(key);
    const at = values?.indexOf(value) ?? -1;
    if (!values || at < 0) return false;
    values.splice(at, 1);
    if (values.length === 0) this.#inFlight.delete(key);
    return true;
  }

  /**
   * Commit phase: a committed draft that puts a room's mirrored text into the log releases that
   * room's held frames in the commit's delivered phase (whoever wrote it: the text is durable).
   */
  committed(e: CommitEvent): void {
    if (this.#releasing.size === 0 || e.known?.type !== 'chat/inputAnswerChanged') return;
    const value = draftTextOf(e.known.answer);
    if (value === undefined) return;
    const key = `${draftKey(e.channel, e.known.requestId, e.known.questionId)}\u0000${value}`;
    const release = this.#releasing.get(key);
    if (!release) return;
    this.#releasing.delete(key);
    e.afterAppend(() => release.room.release(release.mark));
  }

  /** Writes the merged text of every edited question into the AHP draft, as its last editor. */
  async #mirror(room: CollabRoom): Promise<void> {
    const dirty = this.#dirty.get(room);
    this.#dirty.delete(room);
    if (!dirty || room.closed) return;
    const request = openRequest(this.hub.chatEntry(room.channel)?.state, room.requestId);
    if (!request) return;
    const mark = room.heldMark();
    const drafts: Array<{ readonly questionId: string; readonly value: string; readonly principal: Principal; readonly action: WireAction }> = [];
    for (const [questionId, principal] of dirty) {
      if (!request.questions?.some((q) => q.id === questionId && q.kind === 'text')) continue;
      const value = room.text(questionId).toString();
      const current = request.answers?.[questionId];
      const currentText = current && current.state !== 'skipped' && current.value.kind === 'text' ? (current.value as { value: string }).value : current ? undefined : '';
      if (currentText === value) continue;
      const action: WireAction = { type: 'chat/inputAnswerChanged', requestId: room.requestId, questionId };
      if (value !== '') action['answer'] = { state: 'draft', value: { kind: 'text', value } };
      drafts.push({ questionId, value, principal, action });
    }
    // The hub's state holds every text already: once that state is durable, so is what they typed.
    if (drafts.length === 0) {
      return this.hub.drain().then(
        () => room.release(mark),
        () => this.markDirty(room, undefined, undefined),
      );
    }
    for (const [i, d] of drafts.entries()) await this.#write(room, d, i === drafts.length - 1 ? mark : undefined);
  }

  /** Submits one draft; the last of a pass carries the mark its commit releases (see the header). */
  async #write(room: CollabRoom, d: { readonly questionId: string; readonly value: string; readonly principal: Principal; readonly action: WireAction }, mark: number | undefined): Promise<void> {
    const key = draftKey(room.channel, room.requestId, d.questionId);
    const inFlight = this.#inFlight.get(key) ?? [];
    inFlight.push(d.value);
    this.#inFlight.set(key, inFlight);
    const releaseKey = `${key}\u0000${d.value}`;
    if (mark !== undefined) this.#releasing.set(releaseKey, { room, mark });
    try {
      const result = await this.hub.enter({ op: 'dispatch', by: { from: 'principal', principal: d.principal }, channel: room.channel, action: d.action });
      // Refused before deciding (storage away, shutting down) or never durable: not in the log.
      if (result.outcome === 'rejected' && result.at !== 'decision') throw result.cause ?? new Error(result.message);
      if (result.outcome === 'rejected') {
        this.logger.debug('collab mirror not applied', { channel: room.channel, doc: room.requestId, questionId: d.questionId, reason: result.message });
        if (mark !== undefined && this.#releasing.delete(releaseKey)) room.release(mark);
      }
    } catch (err) {
      this.logger.warn('collab mirror failed', { channel: room.channel, ...errorFields(err) });
      // Not in the log: its frames stay held, and the text is written again on the next pass.
      if (mark !== undefined && this.#releasing.delete(releaseKey)) this.markDirty(room, d.questionId, d.principal);
    } finally {
      // Committed (and taken by the delivered phase) or refused: either way no longer in flight.
      this.takeInFlight(room, d.questionId, d.value);
    }
  }
}
