/** Root-channel state and the initial states of every channel the hub creates. */
import { z } from 'zod';
import { labelSchema, metaSchema, SessionStatus, StateLimits, textSchema } from './common.js';
import type { ChatState } from './chat.js';
import { configStateSchema } from './config.js';
import { terminalInfoSchema } from './terminal.js';
import type { SessionState } from './session.js';

// ─── Root ────────────────────────────────────────────────────────────────────

export const agentInfoSchema = z.looseObject({
  provider: z.string().min(1).max(StateLimits.id),
  displayName: labelSchema,
  description: textSchema.optional(),
});
export type AgentInfo = z.infer<typeof agentInfoSchema>;

export const rootStateSchema = z.looseObject({
  agents: z.array(agentInfoSchema),
  /** Number of sessions the host has running. */
  activeSessions: z.number().int().nonnegative().optional(),
  terminals: z.array(terminalInfoSchema).max(StateLimits.listItems).optional(),
  config: configStateSchema.optional(),
  _meta: metaSchema.optional(),
});
export type RootState = z.infer<typeof rootStateSchema>;

// ─── Initial states ──────────────────────────────────────────────────────────

export function initialChatState(resource: string, title: string, modifiedAt: string): ChatState {
  return { resource, title, status: SessionStatus.Idle, modifiedAt, turns: [] };
}

/**
 * A new session. `lifecycle` defaults to `ready`: this hub has nothing to provision before a
 * session can take turns; a host that does passes `creating` and later dispatches `session/ready`.
 */
export function initialSessionState(resource: string, provider: string, title: string, lifecycle: string = 'ready'): SessionState {
  return { resource, provider, title, status: SessionStatus.Idle, lifecycle, activeClients: [], chats: [] };
}

export function initialRootState(agents: readonly AgentInfo[]): RootState {
  return { agents: [...agents] };
}
