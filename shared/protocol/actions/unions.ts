/** Per-channel unions of the action schemas and the action types inferred from them. */
import { z } from 'zod';
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
  type toolCallApprovedActionSchema,
  toolCallAuthRequiredActionSchema,
  toolCallAuthResolvedActionSchema,
  toolCallCompleteActionSchema,
  toolCallConfirmedActionSchema,
  toolCallContentChangedActionSchema,
  toolCallDeltaActionSchema,
  type toolCallDeniedActionSchema,
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
  chatWorkingDirectoryRemovedActionSchema,
  chatIsReadChangedActionSchema,
  chatIsArchivedChangedActionSchema,
} from './chat.js';
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
} from './session.js';
import { activeSessionsChangedActionSchema, agentsChangedActionSchema, rootConfigChangedActionSchema, terminalsChangedActionSchema } from './root.js';
import { sessionHostActionSchemas } from './session-host.js';
import type { AnnotationsAction } from './annotations.js';
import type { ChangesetAction } from './changeset.js';
import type { ResourceWatchAction } from './resource-watch.js';
import type { TerminalAction } from './terminal.js';

// ─── Unions and types ────────────────────────────────────────────────────────

export const chatActionSchema = z.discriminatedUnion('type', [
  turnStartedActionSchema,
  deltaActionSchema,
  reasoningActionSchema,
  responsePartActionSchema,
  usageActionSchema,
  turnCompleteActionSchema,
  turnCancelledActionSchema,
  errorActionSchema,
  turnResumeActionSchema,
  truncatedActionSchema,
  turnsLoadedActionSchema,
  activityChangedActionSchema,
  draftChangedActionSchema,
  inputRequestedActionSchema,
  inputAnswerChangedActionSchema,
  inputCompletedActionSchema,
  pendingMessageSetActionSchema,
  pendingMessageRemovedActionSchema,
  queuedMessagesReorderedActionSchema,
  steeringMessageSetActionSchema,
  steeringMessageRemovedActionSchema,
  toolCallStartActionSchema,
  toolCallDeltaActionSchema,
  toolCallReadyActionSchema,
  toolCallConfirmedActionSchema,
  toolCallCompleteActionSchema,
  toolCallResultConfirmedActionSchema,
  toolCallContentChangedActionSchema,
  toolCallAuthRequiredActionSchema,
  toolCallAuthResolvedActionSchema,
  chatWorkingDirectorySetActionSchema,
  chatWorkingDirectoryRemovedActionSchema,
  chatIsReadChangedActionSchema,
  chatIsArchivedChangedActionSchema,
]);

export const sessionActionSchema = z.discriminatedUnion('type', [
  sessionReadyActionSchema,
  sessionTitleChangedActionSchema,
  chatAddedActionSchema,
  chatRemovedActionSchema,
  chatUpdatedActionSchema,
  defaultChatChangedActionSchema,
  inputNeededSetActionSchema,
  inputNeededRemovedActionSchema,
  isReadChangedActionSchema,
  isArchivedChangedActionSchema,
  sessionStateReplacedActionSchema,
  toolApprovalRememberedActionSchema,
  toolDenialRememberedActionSchema,
  toolChoiceForgottenActionSchema,
  agentGrantRecordedActionSchema,
  ...sessionHostActionSchemas,
  chatsReorderedActionSchema,
]);

export const rootActionSchema = z.discriminatedUnion('type', [agentsChangedActionSchema, activeSessionsChangedActionSchema, terminalsChangedActionSchema, rootConfigChangedActionSchema]);

export type TurnStartedAction = z.infer<typeof turnStartedActionSchema>;
export type DeltaAction = z.infer<typeof deltaActionSchema>;
export type ReasoningAction = z.infer<typeof reasoningActionSchema>;
export type ResponsePartAction = z.infer<typeof responsePartActionSchema>;
export type UsageAction = z.infer<typeof usageActionSchema>;
export type TurnCompleteAction = z.infer<typeof turnCompleteActionSchema>;
export type TurnCancelledAction = z.infer<typeof turnCancelledActionSchema>;
export type ErrorAction = z.infer<typeof errorActionSchema>;
export type TurnResumeAction = z.infer<typeof turnResumeActionSchema>;
export type TruncatedAction = z.infer<typeof truncatedActionSchema>;
export type TurnsLoadedAction = z.infer<typeof turnsLoadedActionSchema>;
export type ActivityChangedAction = z.infer<typeof activityChangedActionSchema>;
export type DraftChangedAction = z.infer<typeof draftChangedActionSchema>;
export type InputRequestedAction = z.infer<typeof inputRequestedActionSchema>;
export type InputAnswerChangedAction = z.infer<typeof inputAnswerChangedActionSchema>;
export type InputCompletedAction = z.infer<typeof inputCompletedActionSchema>;
export type PendingMessageSetAction = z.infer<typeof pendingMessageSetActionSchema>;
export type PendingMessageRemovedAction = z.infer<typeof pendingMessageRemovedActionSchema>;
export type QueuedMessagesReorderedAction = z.infer<typeof queuedMessagesReorderedActionSchema>;
export type SteeringMessageSetAction = z.infer<typeof steeringMessageSetActionSchema>;
export type SteeringMessageRemovedAction = z.infer<typeof steeringMessageRemovedActionSchema>;
export type ToolCallStartAction = z.infer<typeof toolCallStartActionSchema>;
export type ToolCallDeltaAction = z.infer<typeof toolCallDeltaActionSchema>;
export type ToolCallReadyAction = z.infer<typeof toolCallReadyActionSchema>;
export type ToolCallApprovedAction = z.infer<typeof toolCallApprovedActionSchema>;
export type ToolCallDeniedAction = z.infer<typeof toolCallDeniedActionSchema>;
export type ToolCallConfirmedAction = z.infer<typeof toolCallConfirmedActionSchema>;
export type ToolCallCompleteAction = z.infer<typeof toolCallCompleteActionSchema>;
export type ToolCallResultConfirmedAction = z.infer<typeof toolCallResultConfirmedActionSchema>;
export type ToolCallContentChangedAction = z.infer<typeof toolCallContentChangedActionSchema>;
export type ToolCallAuthRequiredAction = z.infer<typeof toolCallAuthRequiredActionSchema>;
export type ToolCallAuthResolvedAction = z.infer<typeof toolCallAuthResolvedActionSchema>;
export type SessionReadyAction = z.infer<typeof sessionReadyActionSchema>;
export type SessionTitleChangedAction = z.infer<typeof sessionTitleChangedActionSchema>;
export type ChatAddedAction = z.infer<typeof chatAddedActionSchema>;
export type ChatRemovedAction = z.infer<typeof chatRemovedActionSchema>;
export type ChatUpdatedAction = z.infer<typeof chatUpdatedActionSchema>;
export type DefaultChatChangedAction = z.infer<typeof defaultChatChangedActionSchema>;
export type InputNeededSetAction = z.infer<typeof inputNeededSetActionSchema>;
export type InputNeededRemovedAction = z.infer<typeof inputNeededRemovedActionSchema>;
export type IsReadChangedAction = z.infer<typeof isReadChangedActionSchema>;
export type IsArchivedChangedAction = z.infer<typeof isArchivedChangedActionSchema>;
export type SessionStateReplacedAction = z.infer<typeof sessionStateReplacedActionSchema>;
export type AgentsChangedAction = z.infer<typeof agentsChangedActionSchema>;
export type ToolApprovalRememberedAction = z.infer<typeof toolApprovalRememberedActionSchema>;
export type ToolDenialRememberedAction = z.infer<typeof toolDenialRememberedActionSchema>;
export type ToolChoiceForgottenAction = z.infer<typeof toolChoiceForgottenActionSchema>;
export type AgentGrantRecordedAction = z.infer<typeof agentGrantRecordedActionSchema>;

export type ChatAction = z.infer<typeof chatActionSchema>;
export type SessionAction = z.infer<typeof sessionActionSchema>;
export type RootAction = z.infer<typeof rootActionSchema>;
/** Actions of the channels a session owns beside its chats (terminal, changeset, annotations, resource watch). */
export type AuxiliaryAction = TerminalAction | ChangesetAction | AnnotationsAction | ResourceWatchAction;
export type KnownAction = ChatAction | SessionAction | RootAction | AuxiliaryAction;
export type ChatActionType = ChatAction['type'];
export type SessionActionType = SessionAction['type'];
export type RootActionType = RootAction['type'];
export type KnownActionType = KnownAction['type'];
