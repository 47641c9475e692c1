/**
 * The types a conformance case run shares with its actors: the result a run reports, and what an
 * HTTP or bridge actor may read of the run (`CaseContext`, implemented by `CaseRun` in runner.ts).
 * Below both, so the runner and the actors do not import each other.
 */
import type { FaultProxy } from './fault-proxy.js';
import type { HubHost } from './hosts.js';
import type { ChannelRef, Invariant } from './case-format.js';

export interface CaseResult {
  readonly id: string;
  readonly surface: string;
  readonly faults: readonly string[];
  readonly invariants: readonly Invariant[];
  readonly outcome: string;
  readonly passed: boolean;
  /** Planted runs: the invariant the plant names is among the violations. */
  readonly caught: boolean;
  /** Invariants that did not hold, with what was seen. */
  readonly violations: Array<{ invariant: Invariant | 'outcome' | 'step'; detail: string }>;
  /** Proxy rules that fired, by name, with how often. */
  readonly fired: Record<string, number>;
  readonly ms: number;
}

/** A session the case created, by its name in the case. */
export interface CaseSession {
  readonly session: string;
  readonly chat: string;
}

/** What an actor reads of the case run it belongs to. */
export interface CaseContext {
  readonly host: HubHost;
  readonly sessions: Map<string, CaseSession>;
  outcome: string;
  readonly softWaitMs: number;
  marker(op: string): string;
  proxyOf(actor: string): Promise<FaultProxy>;
  tokenOf(actor: string): string | undefined;
  channel(ref: ChannelRef): string;
}
