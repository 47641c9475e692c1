/**
 * Session-channel actions about what the host provides (AHP 0.6–0.8): provisioning failure,
 * activity, server tools, active clients, working directories, customizations and MCP servers,
 * config, changesets and `_meta`.
 */
import { z } from 'zod';
import { activeClientSchema, changesetSchema, configValuesSchema, customizationSchema, errorInfoSchema, idSchema, labelSchema, mcpServerStateSchema, metaSchema, StateLimits, toolDefinitionSchema } from '../state.js';
import { meta } from './common.js';

const directorySchema = z.string().min(1).max(StateLimits.resourceUri);

export const sessionCreationFailedActionSchema = z.looseObject({
  type: z.literal('session/creationFailed'),
  error: errorInfoSchema,
  ...meta,
});
/** `activity` absent (or `null`) clears it. */
export const sessionActivityChangedActionSchema = z.looseObject({
  type: z.literal('session/activityChanged'),
  activity: labelSchema.optional(),
  ...meta,
});
/** `changesets` absent (or `null`) removes the catalogue. */
export const sessionChangesetsChangedActionSchema = z.looseObject({
  type: z.literal('session/changesetsChanged'),
  changesets: z.array(changesetSchema).max(StateLimits.listItems).optional(),
  ...meta,
});
export const sessionServerToolsChangedActionSchema = z.looseObject({
  type: z.literal('session/serverToolsChanged'),
  tools: z.array(toolDefinitionSchema).max(StateLimits.listItems),
  ...meta,
});
export const sessionActiveClientSetActionSchema = z.looseObject({
  type: z.literal('session/activeClientSet'),
  activeClient: activeClientSchema,
  ...meta,
});
export const sessionActiveClientRemovedActionSchema = z.looseObject({
  type: z.literal('session/activeClientRemoved'),
  clientId: idSchema,
  ...meta,
});
export const sessionWorkingDirectorySetActionSchema = z.looseObject({
  type: z.literal('session/workingDirectorySet'),
  directory: directorySchema,
  ...meta,
});
export const sessionWorkingDirectoryRemovedActionSchema = z.looseObject({
  type: z.literal('session/workingDirectoryRemoved'),
  directory: directorySchema,
  ...meta,
});
export const sessionCustomizationsChangedActionSchema = z.looseObject({
  type: z.literal('session/customizationsChanged'),
  customizations: z.array(customizationSchema).max(StateLimits.listItems),
  ...meta,
});
export const sessionCustomizationToggledActionSchema = z.looseObject({
  type: z.literal('session/customizationToggled'),
  id: idSchema,
  enabled: z.boolean(),
  ...meta,
});
export const sessionCustomizationUpdatedActionSchema = z.looseObject({
  type: z.literal('session/customizationUpdated'),
  customization: customizationSchema,
  ...meta,
});
export const sessionCustomizationRemovedActionSchema = z.looseObject({
  type: z.literal('session/customizationRemoved'),
  id: idSchema,
  ...meta,
});
export const sessionMcpServerStateChangedActionSchema = z.looseObject({
  type: z.literal('session/mcpServerStateChanged'),
  id: idSchema,
  state: mcpServerStateSchema,
  channel: z.string().max(StateLimits.resourceUri).optional(),
  ...meta,
});
export const sessionMcpServerStartRequestedActionSchema = z.looseObject({
  type: z.literal('session/mcpServerStartRequested'),
  id: idSchema,
  ...meta,
});
export const sessionMcpServerStopRequestedActionSchema = z.looseObject({
  type: z.literal('session/mcpServerStopRequested'),
  id: idSchema,
  ...meta,
});
/** Merges `config` into the values (or replaces them with `replace: true`); a no-op without a config. */
export const sessionConfigChangedActionSchema = z.looseObject({
  type: z.literal('session/configChanged'),
  config: configValuesSchema,
  replace: z.boolean().optional(),
  ...meta,
});
/** Replaces the session's `_meta` wholesale (absent removes it). */
export const sessionMetaChangedActionSchema = z.looseObject({
  type: z.literal('session/metaChanged'),
  _meta: metaSchema.optional(),
});

export const sessionHostActionSchemas = [
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
] as const;

export type SessionHostAction = z.infer<(typeof sessionHostActionSchemas)[number]>;
export const SESSION_HOST_ACTION_TYPES: ReadonlySet<string> = new Set(sessionHostActionSchemas.map((schema) => schema.shape.type.value));
