/**
 * AHP actions (§3) as zod schemas, one per action type (per channel under `actions/`, re-exported
 * here so `./actions.js` stays the import path), plus `parseAction` which validates a raw client
 * payload against the schema for its `type`.
 *
 * Actions travel as bare payloads inside envelopes and never carry their channel URI. Unknown
 * action types are legal on the wire (newer peers) and are reducer no-ops, so `parseAction` lets
 * them through; whether a client may *dispatch* one is a separate question answered by
 * `CLIENT_DISPATCHABLE_ACTIONS` and `validateClientAction`.
 */
import type { z } from 'zod';
import { checkJsonBounds, JsonBounds, type JsonBoundsViolation } from './json-bounds.js';
import { describeIssues } from './describe-issues.js';
import { type AnyAction, anyActionSchema } from './actions/common.js';
import {
  activityChangedActionSchema,
  deltaActionSchema,
  draftChangedActionSchema,
  errorActionSchema,
  inputAnswerChangedActionSchema,
  inputCompletedActionSchema,
  inputRequestedActionSchema,
  pendingMessageRemovedActionSchema,
  pendingMessageSetActionSchema,
  queuedMessagesReorderedActionSchema,
  reasoningActionSchema,
  responsePartActionSchema,
  steeringMessageRemovedActionSchema,
  steeringMessageSetActionSchema,
  toolCallAuthRequiredActionSchema,
  toolCallAuthResolvedActionSchema,
  toolCallCompleteActionSchema,
  toolCallConfirmedActionSchema,
  toolCallContentChangedActionSchema,
  toolCallDeltaActionSchema,
  toolCallReadyActionSchema,
  toolCallResultConfirmedActionSchema,
  toolCallStartActionSchema,
  truncatedActionSchema,
  turnCancelledActionSchema,
  turnCompleteActionSchema,
  turnResumeActionSchema,
  turnsLoadedActionSchema,
  turnStartedActionSchema,
  usageActionSchema,
  chatWorkingDirectorySetActionSchema,
  chatIsReadChangedActionSchema,
  chatIsArchivedChangedActionSchema,
  chatWorkingDirectoryRemovedActionSchema,
} from './actions/chat.js';
import {
  chatAddedActionSchema,
  chatsReorderedActionSchema,
  chatRemovedActionSchema,
  chatUpdatedActionSchema,
  defaultChatChangedActionSchema,
  inputNeededRemovedActionSchema,
  inputNeededSetActionSchema,
  isArchivedChangedActionSchema,
  isReadChangedActionSchema,
  sessionReadyActionSchema,
  sessionStateReplacedActionSchema,
  sessionTitleChangedActionSchema,
  agentGrantRecordedActionSchema,
  toolApprovalRememberedActionSchema,
  toolChoiceForgottenActionSchema,
  toolDenialRememberedActionSchema,
} from './actions/session.js';
import { agentsChangedActionSchema, activeSessionsChangedActionSchema, terminalsChangedActionSchema, rootConfigChangedActionSchema } from './actions/root.js';
import type { ChatActionType, KnownAction, KnownActionType, RootActionType, SessionActionType } from './actions/unions.js';
import {
  sessionCreationFailedActionSchema,
  sessionActivityChangedActionSchema,
  sessionChangesetsChangedActionSchema,
  sessionServerToolsChangedActionSchema,
  sessionActiveClientSetActionSchema,
  sessionActiveClientRemovedActionSchema,
  sessionWorkingDirectorySetActionSchema,
  sessionWorkingDirectoryRemovedActionSchema,
  sessionCustomizationsChangedActionSchema,
  sessionCustomizationToggledActionSchema,
  sessionCustomizationUpdatedActionSchema,
  sessionCustomizationRemovedActionSchema,
  sessionMcpServerStateChangedActionSchema,
  sessionMcpServerStartRequestedActionSchema,
  sessionMcpServerStopRequestedActionSchema,
  sessionConfigChangedActionSchema,
  sessionMetaChangedActionSchema,
} from './actions/session-host.js';
import {
  terminalDataActionSchema,
  terminalInputActionSchema,
  terminalResizedActionSchema,
  terminalClaimedActionSchema,
  terminalTitleChangedActionSchema,
  terminalCwdChangedActionSchema,
  terminalExitedActionSchema,
  terminalClearedActionSchema,
  terminalCommandDetectionAvailableActionSchema,
  terminalCommandExecutedActionSchema,
  terminalCommandFinishedActionSchema,
} from './actions/terminal.js';
import {
  changesetStatusChangedActionSchema,
  changesetFileSetActionSchema,
  changesetFileRemovedActionSchema,
  changesetFilesReviewChangedActionSchema,
  changesetContentChangedActionSchema,
  changesetOperationsChangedActionSchema,
  changesetOperationStatusChangedActionSchema,
  changesetClearedActionSchema,
} from './actions/changeset.js';
import { annotationsSetActionSchema, annotationsUpdatedActionSchema, annotationsRemovedActionSchema, annotationsEntrySetActionSchema, annotationsEntryRemovedActionSchema } from './actions/annotations.js';
import { resourceWatchChangedActionSchema } from './actions/resource-watch.js';
import type { AnnotationsActionType } from './actions/annotations.js';
import type { ChangesetActionType } from './actions/changeset.js';
import type { ResourceWatchActionType } from './actions/resource-watch.js';
import type { TerminalActionType } from './actions/terminal.js';

export * from './actions/common.js';
export * from './actions/chat.js';
export * from './actions/session.js';
export * from './actions/root.js';
export * from './actions/unions.js';
export * from './actions/session-host.js';
export * from './actions/terminal.js';
export * from './actions/changeset.js';
export * from './actions/annotations.js';
export * from './actions/resource-watch.js';

// ─── Registry ────────────────────────────────────────────────────────────────

/** Schema per known action type. `satisfies` makes a missing or misspelled type a compile error. */
const ACTION_SCHEMAS = {
  'chat/turnStarted': turnStartedActionSchema,
  'chat/delta': deltaActionSchema,
  'chat/reasoning': reasoningActionSchema,
  'chat/responsePart': responsePartActionSchema,
  'chat/usage': usageActionSchema,
  'chat/turnComplete': turnCompleteActionSchema,
  'chat/turnCancelled': turnCancelledActionSchema,
  'chat/error': errorActionSchema,
  'chat/turnResume': turnResumeActionSchema,
  'chat/truncated': truncatedActionSchema,
  'chat/turnsLoaded': turnsLoadedActionSchema,
  'chat/activityChanged': activityChangedActionSchema,
  'chat/draftChanged': draftChangedActionSchema,
  'chat/inputRequested': inputRequestedActionSchema,
  'chat/inputAnswerChanged': inputAnswerChangedActionSchema,
  'chat/inputCompleted': inputCompletedActionSchema,
  'chat/pendingMessageSet': pendingMessageSetActionSchema,
  'chat/pendingMessageRemoved': pendingMessageRemovedActionSchema,
  'chat/queuedMessagesReordered': queuedMessagesReorderedActionSchema,
  'chat/steeringMessageSet': steeringMessageSetActionSchema,
  'chat/steeringMessageRemoved': steeringMessageRemovedActionSchema,
  'chat/toolCallStart': toolCallStartActionSchema,
  'chat/toolCallDelta': toolCallDeltaActionSchema,
  'chat/toolCallReady': toolCallReadyActionSchema,
  'chat/toolCallConfirmed': toolCallConfirmedActionSchema,
  'chat/toolCallComplete': toolCallCompleteActionSchema,
  'chat/toolCallResultConfirmed': toolCallResultConfirmedActionSchema,
  'chat/toolCallContentChanged': toolCallContentChangedActionSchema,
  'chat/toolCallAuthRequired': toolCallAuthRequiredActionSchema,
  'chat/toolCallAuthResolved': toolCallAuthResolvedActionSchema,
  'session/ready': sessionReadyActionSchema,
  'session/titleChanged': sessionTitleChangedActionSchema,
  'session/chatAdded': chatAddedActionSchema,
  'session/chatRemoved': chatRemovedActionSchema,
  'session/chatUpdated': chatUpdatedActionSchema,
  'session/defaultChatChanged': defaultChatChangedActionSchema,
  'session/inputNeededSet': inputNeededSetActionSchema,
  'session/inputNeededRemoved': inputNeededRemovedActionSchema,
  'session/isReadChanged': isReadChangedActionSchema,
  'session/isArchivedChanged': isArchivedChangedActionSchema,
  'x-session/stateReplaced': sessionStateReplacedActionSchema,
  'x-session/toolApprovalRemembered': toolApprovalRememberedActionSchema,
  'x-session/toolDenialRemembered': toolDenialRememberedActionSchema,
  'x-session/toolChoiceForgotten': toolChoiceForgottenActionSchema,
  'x-session/agentGrantRecorded': agentGrantRecordedActionSchema,
  'root/agentsChanged': agentsChangedActionSchema,
  'chat/workingDirectorySet': chatWorkingDirectorySetActionSchema,
  'chat/isReadChanged': chatIsReadChangedActionSchema,
  'chat/isArchivedChanged': chatIsArchivedChangedActionSchema,
  'session/chatsReordered': chatsReorderedActionSchema,
  'chat/workingDirectoryRemoved': chatWorkingDirectoryRemovedActionSchema,
  'session/creationFailed': sessionCreationFailedActionSchema,
  'session/activityChanged': sessionActivityChangedActionSchema,
  'session/changesetsChanged': sessionChangesetsChangedActionSchema,
  'session/serverToolsChanged': sessionServerToolsChangedActionSchema,
  'session/activeClientSet': sessionActiveClientSetActionSchema,
  'session/activeClientRemoved': sessionActiveClientRemovedActionSchema,
  'session/workingDirectorySet': sessionWorkingDirectorySetActionSchema,
  'session/workingDirectoryRemoved': sessionWorkingDirectoryRemovedActionSchema,
  'session/customizationsChanged': sessionCustomizationsChangedActionSchema,
  'session/customizationToggled': sessionCustomizationToggledActionSchema,
  'session/customizationUpdated': sessionCustomizationUpdatedActionSchema,
  'session/customizationRemoved': sessionCustomizationRemovedActionSchema,
  'session/mcpServerStateChanged': sessionMcpServerStateChangedActionSchema,
  'session/mcpServerStartRequested': sessionMcpServerStartRequestedActionSchema,
  'session/mcpServerStopRequested': sessionMcpServerStopRequestedActionSchema,
  'session/configChanged': sessionConfigChangedActionSchema,
  'session/metaChanged': sessionMetaChangedActionSchema,
  'root/activeSessionsChanged': activeSessionsChangedActionSchema,
  'root/terminalsChanged': terminalsChangedActionSchema,
  'root/configChanged': rootConfigChangedActionSchema,
  'terminal/data': terminalDataActionSchema,
  'terminal/input': terminalInputActionSchema,
  'terminal/resized': terminalResizedActionSchema,
  'terminal/claimed': terminalClaimedActionSchema,
  'terminal/titleChanged': terminalTitleChangedActionSchema,
  'terminal/cwdChanged': terminalCwdChangedActionSchema,
  'terminal/exited': terminalExitedActionSchema,
  'terminal/cleared': terminalClearedActionSchema,
  'terminal/commandDetectionAvailable': terminalCommandDetectionAvailableActionSchema,
  'terminal/commandExecuted': terminalCommandExecutedActionSchema,
  'terminal/commandFinished': terminalCommandFinishedActionSchema,
  'changeset/statusChanged': changesetStatusChangedActionSchema,
  'changeset/fileSet': changesetFileSetActionSchema,
  'changeset/fileRemoved': changesetFileRemovedActionSchema,
  'changeset/filesReviewChanged': changesetFilesReviewChangedActionSchema,
  'changeset/contentChanged': changesetContentChangedActionSchema,
  'changeset/operationsChanged': changesetOperationsChangedActionSchema,
  'changeset/operationStatusChanged': changesetOperationStatusChangedActionSchema,
  'changeset/cleared': changesetClearedActionSchema,
  'annotations/set': annotationsSetActionSchema,
  'annotations/updated': annotationsUpdatedActionSchema,
  'annotations/removed': annotationsRemovedActionSchema,
  'annotations/entrySet': annotationsEntrySetActionSchema,
  'annotations/entryRemoved': annotationsEntryRemovedActionSchema,
  'resourceWatch/changed': resourceWatchChangedActionSchema,
} satisfies { [T in KnownActionType]: z.ZodType<Extract<KnownAction, { type: T }>> };

export const KNOWN_ACTION_TYPES: readonly KnownActionType[] = Object.keys(ACTION_SCHEMAS) as KnownActionType[];
const knownTypes: ReadonlySet<string> = new Set(KNOWN_ACTION_TYPES);

export function isKnownActionType(type: string): type is KnownActionType {
  return knownTypes.has(type);
}

export function isChatActionType(type: string): type is ChatActionType {
  return isKnownActionType(type) && type.startsWith('chat/');
}

export function isSessionActionType(type: string): type is SessionActionType {
  return isKnownActionType(type) && (type.startsWith('session/') || type.startsWith('x-session/'));
}

export function isRootActionType(type: string): type is RootActionType {
  return isKnownActionType(type) && type.startsWith('root/');
}

export function isTerminalActionType(type: string): type is TerminalActionType {
  return isKnownActionType(type) && type.startsWith('terminal/');
}

export function isChangesetActionType(type: string): type is ChangesetActionType {
  return isKnownActionType(type) && type.startsWith('changeset/');
}

export function isAnnotationsActionType(type: string): type is AnnotationsActionType {
  return isKnownActionType(type) && type.startsWith('annotations/');
}

export function isResourceWatchActionType(type: string): type is ResourceWatchActionType {
  return isKnownActionType(type) && type.startsWith('resourceWatch/');
}

/**
 * Narrows an action whose type is known. Sound for anything that came through `parseAction` or
 * was built by typed server code; the reducers rely on it and guard against the rest.
 */
export function isKnownAction(action: { type: string }): action is KnownAction {
  return isKnownActionType(action.type);
}

/**
 * Server-only chat actions that only stream into the active turn: they never change status,
 * summary or input-needed (the hub skips roll-up) nor which interactions are pending.
 */
export const STREAMING_ONLY_ACTIONS: ReadonlySet<string> = new Set<KnownActionType>(['chat/delta', 'chat/reasoning', 'chat/usage', 'chat/toolCallDelta', 'chat/draftChanged', 'chat/toolCallContentChanged']);

/** Actions a client may dispatch (the "C" entries of §3, plus [L]/[S] additions). */
export const CLIENT_DISPATCHABLE_ACTIONS: ReadonlySet<string> = new Set<KnownActionType>([
  'chat/turnStarted',
  'chat/turnCancelled',
  'chat/turnResume',
  'chat/truncated',
  'chat/draftChanged',
  'chat/inputAnswerChanged',
  'chat/inputCompleted',
  'chat/pendingMessageSet',
  'chat/pendingMessageRemoved',
  'chat/queuedMessagesReordered',
  'chat/steeringMessageSet',
  'chat/steeringMessageRemoved',
  'chat/toolCallConfirmed',
  'chat/toolCallResultConfirmed',
  'chat/toolCallComplete',
  'chat/toolCallContentChanged',
  'session/isReadChanged',
  'session/isArchivedChanged',
  // A person renames the session (the app's Rename): the standard action, so replicas follow.
  'session/titleChanged',
  'chat/isReadChanged',
  'chat/isArchivedChanged',
  'session/defaultChatChanged',
  'x-session/toolChoiceForgotten',
]);

/**
 * Hub-only actions that used to sit in a standard namespace, by their old name. Read for one
 * version (agents written against it may still send it, and logs written before hold it):
 * `parseAction` and the session reducer treat the old name as the new one; nothing is sent
 * under the old name. Drop an entry one release after its rename (docs/compatibility.md).
 */
export const LEGACY_ACTION_TYPES: ReadonlyMap<string, KnownActionType> = new Map<string, KnownActionType>([['session/stateReplaced', 'x-session/stateReplaced']]);

// ─── Parsing ─────────────────────────────────────────────────────────────────

export type ParseActionResult = { readonly ok: true; readonly action: KnownAction | AnyAction } | { readonly ok: false; readonly message: string; readonly code?: JsonBoundsViolation };

/**
 * Validates a raw action. Known types must match their schema; the message names the failing
 * field (`chat/turnStarted: message.text: …`). Unknown types pass as `{type, …}`. A top-level
 * `null` field of a known type is read as absent (see `withoutNullFields`).
 * Returned actions are fresh objects (unknown keys kept), safe to store and echo.
 */
export function parseAction(raw: unknown): ParseActionResult {
  // Unknown keys are carried through unvalidated, so their shape is bounded first: a value
  // nested thousands deep would otherwise be stored and then overflow every encoder.
  const outOfBounds = checkJsonBounds(raw);
  if (outOfBounds) return { ok: false, message: `action: ${outOfBounds.message}`, code: outOfBounds.code };
  let action: AnyAction;
  const shaped = knownTypedObject(raw);
  if (shaped !== undefined) {
    // A known type: its own schema below checks (and copies) everything; the `{type}` pass would only copy it once more.
    action = shaped;
  } else {
    const envelope = anyActionSchema.safeParse(raw);
    if (!envelope.success) {
      return { ok: false, message: `action: ${describeIssues(envelope.error.issues)}` };
    }
    action = envelope.data;
  }
  const legacy = LEGACY_ACTION_TYPES.get(action.type);
  if (legacy) action = { ...action, type: legacy };
  const { type } = action;
  if (!isKnownActionType(type)) return { ok: true, action };

  const schema = ACTION_SCHEMAS[type];
  const unknownChars = unknownFieldChars(action, schema);
  if (unknownChars > JsonBounds.maxUnknownFieldChars) {
    return {
      ok: false,
      code: 'unknown_fields_too_large',
      message: `${type}: fields this hub does not know take ${unknownChars} JSON characters; at most ${JsonBounds.maxUnknownFieldChars} are carried unvalidated`,
    };
  }
  const parsed = schema.safeParse(withoutNullFields(action));
  if (!parsed.success) return { ok: false, message: `${type}: ${describeIssues(parsed.error.issues)}` };
  return { ok: true, action: parsed.data };
}

/** JSON characters of the top-level values under keys `schema` does not name (bounded already by `checkJsonBounds`). */
function unknownFieldChars(action: Record<string, unknown>, schema: z.ZodType): number {
  const shape = (schema as { shape?: Record<string, unknown> }).shape;
  if (shape === undefined) return 0;
  let chars = 0;
  for (const key in action) if (!Object.hasOwn(shape, key) && action[key] !== undefined) chars += key.length + (JSON.stringify(action[key])?.length ?? 0);
  return chars;
}

/**
 * AHP treats a JSON `null` field as absent, and peers with typed encoders send `"draft": null`
 * or `"answer": null` to mean "clear". Top-level fields only: nested payloads (tool results,
 * `_meta`) are opaque and may use `null` as a value.
 */
function withoutNullFields(action: AnyAction): AnyAction {
  // Looked for first without building anything: almost every action has no null field.
  let hasNull = false;
  for (const key in action) {
    if (Object.hasOwn(action, key) && action[key] === null) {
      hasNull = true;
      break;
    }
  }
  if (!hasNull) return action;
  return Object.fromEntries(Object.entries(action).filter(([, value]) => value !== null)) as AnyAction;
}

/**
 * `raw` as an action when it is an object whose `type` is known (under its own or a legacy name):
 * what `anyActionSchema` would accept, without its copy. Anything else: undefined (the schema then
 * checks it and names what is wrong, and copies an unknown type's action, so it is fresh too).
 */
function knownTypedObject(raw: unknown): AnyAction | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  const type = (raw as { type?: unknown }).type;
  if (typeof type !== 'string' || !(isKnownActionType(type) || LEGACY_ACTION_TYPES.has(type))) return undefined;
  return raw as AnyAction;
}
