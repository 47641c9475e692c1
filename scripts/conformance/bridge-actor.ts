/** Placeholder: the ACP editor bridge actor. */
import type { CaseResult, CaseRun } from './runner.js';
import type { Invariant, Step } from './case-format.js';

export class BridgeActor {
  constructor(readonly name: string) {}
  async step(_step: Step, _run: CaseRun): Promise<void> {}
  checkInvariants(_invariants: readonly Invariant[], _violations: CaseResult['violations'], _states: Map<string, unknown>, _run: CaseRun): void {}
  close(): void {}
}
