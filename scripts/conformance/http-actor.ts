/** Placeholder: the HTTP/SSE actor (qwen and DataWorks routes). */
import type { Flaws } from './actor.js';
import type { CaseResult, CaseRun } from './runner.js';
import type { Invariant, Step } from './case-format.js';

export class HttpActor {
  constructor(
    readonly name: string,
    readonly flaws: Flaws,
  ) {}
  async step(_step: Step, _run: CaseRun): Promise<void> {}
  unknownOutcomes(): string[] {
    return [];
  }
  checkInvariants(_invariants: readonly Invariant[], _violations: CaseResult['violations']): void {}
  close(): void {}
}
