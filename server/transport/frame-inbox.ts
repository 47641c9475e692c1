/**
 * One connection's inbound text frames, handled one at a time in arrival order (so answers keep
 * the order of requests), each after its share of the event-loop turn (`LoopShare`). A plain
 * queue and one loop per burst instead of a promise chain per frame: chaining `then`, `catch` and
 * `finally` with a closure each cost every frame four promises and four closures (issue 32).
 */
import type { LoopShare } from '../loop-share.js';
import type { Admission, RpcContext, RpcRouter } from '../ahp/rpc.js';

export class FrameInbox {
  readonly #texts: string[] = [];
  readonly #admissions: Admission[] = [];
  #head = 0;
  #running = false;
  /** Starts the loop in a microtask, as the promise chain did: a frame is never handled inside ws's `message` event. */
  readonly #start = (): void => void this.#run();

  /** The router and context themselves, not a closure over them: a frame goes forward to the router, never back through the transport. */
  constructor(
    private readonly router: Pick<RpcRouter, 'handleFrame'>,
    private readonly ctx: RpcContext,
    private readonly share: LoopShare,
    /** Told after each frame, handled or failed (flow control counts frames in flight). */
    private readonly flow: { handled(): void },
    private readonly failed: (err: unknown) => void,
  ) {}

  push(text: string, admission: Admission): void {
    this.#texts.push(text);
    this.#admissions.push(admission);
    if (this.#running) return;
    this.#running = true;
    queueMicrotask(this.#start);
  }

  async #run(): Promise<void> {
    while (this.#head < this.#texts.length) {
      const wait = this.share.turn();
      if (wait !== undefined) await wait;
      const i = this.#head++;
      const text = this.#texts[i]!;
      const admission = this.#admissions[i]!;
      this.#texts[i] = '';
      try {
        await this.router.handleFrame(this.ctx, text, admission);
      } catch (err) {
        this.failed(err);
      } finally {
        this.flow.handled();
      }
    }
    this.#texts.length = 0;
    this.#admissions.length = 0;
    this.#head = 0;
    this.#running = false;
  }
}
