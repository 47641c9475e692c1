/**
 * The ACP module's public entry: both directions of the AHP ↔ ACP mapping, used by the hosted
 * agent provider (`server/agents/acp`: ACP → AHP), the interactions feature (AHP → ACP
 * notifications for qwen/DataWorks listeners) and the editor bridge (`cli/acp-bridge`, which
 * imports nothing else from `server/`).
 *
 * - `to-ahp.ts`: ACP session updates, stop reasons and permission options → AHP actions;
 * - `to-acp.ts`: AHP actions and interactions → ACP `session/update` and permission requests;
 * - `extension.ts`: the mid-turn input extension's method names.
 *
 * Pure: no Node, no hub; only `shared/` and the ACP SDK's types.
 */
export * from './to-ahp.js';
export * from './to-acp.js';
export { STEERING_EXTENSION } from './extension.js';
// Which turn end an AHP action is, as the ACP stop reason is derived from it (defined beside the hooks).
export { turnEndReasonOf, type TurnEndReason } from '../hub/hub-port.js';
