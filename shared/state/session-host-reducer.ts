/**
 * Session-reducer transitions for what the host provides (AHP 0.6–0.8): provisioning failure,
 * activity, server tools, active clients, working directories, customizations and MCP servers,
 * config, changesets and `_meta`. Pure and clock-free, like `sessionReducer`, which calls
 * `reduceSessionHostAction` for these types.
 */
import type { SessionHostAction } from '../protocol/actions.js';
import type { ActiveClient, ConfigState, Customization, SessionState } from '../protocol/state.js';
import { removeWhere, upsertBy, withField } from './collections.js';

const clientIdOf = (client: ActiveClient): string => client.clientId;
const customizationIdOf = (customization: Customization): string => customization.id;

export function reduceSessionHostAction(state: SessionState, action: SessionHostAction): SessionState {
  switch (action.type) {
    case 'session/creationFailed':
      return { ...state, lifecycle: 'creationFailed', creationError: action.error };
    case 'session/activityChanged':
      return withField(state, 'activity', action.activity);
    case 'session/changesetsChanged':
      return withField(state, 'changesets', action.changesets && [...action.changesets]);
    case 'session/serverToolsChanged':
      return { ...state, serverTools: [...action.tools] };
    case 'session/activeClientSet':
      return { ...state, activeClients: upsertBy(state.activeClients, action.activeClient, clientIdOf) };
    case 'session/activeClientRemoved': {
      const activeClients = removeWhere(state.activeClients, (client) => client.clientId === action.clientId);
      return activeClients === state.activeClients ? state : { ...state, activeClients: [...activeClients] };
    }
    case 'session/workingDirectorySet':
      return withDirectory(state, action.directory);
    case 'session/workingDirectoryRemoved':
      return withoutDirectory(state, action.directory);
    case 'session/customizationsChanged':
      return { ...state, customizations: [...action.customizations] };
    case 'session/customizationToggled':
      return updateCustomization(state, action.id, (entry) => ({ ...entry, enabled: action.enabled }));
    case 'session/customizationUpdated':
      return { ...state, customizations: upsertBy(state.customizations, action.customization, customizationIdOf) };
    case 'session/customizationRemoved':
      return removeCustomization(state, action.id);
    case 'session/mcpServerStateChanged':
      return updateMcpServer(state, action.id, (entry) => withField({ ...entry, state: action.state }, 'channel', action.channel));
    case 'session/mcpServerStartRequested':
      return updateMcpServer(state, action.id, (entry) => withField({ ...entry, state: { kind: 'starting' } }, 'channel', undefined));
    case 'session/mcpServerStopRequested':
      return updateMcpServer(state, action.id, (entry) => withField({ ...entry, state: { kind: 'stopped' } }, 'channel', undefined));
    case 'session/configChanged':
      return state.config ? { ...state, config: changedConfig(state.config, action.config, action.replace) } : state;
    case 'session/metaChanged':
      return withField(state, '_meta', action._meta);
    default:
      return unreachable(action, state);
  }
}

/** Shared by the root and session reducers: merge into the values, or replace them. */
export function changedConfig(config: ConfigState, values: Record<string, unknown>, replace: boolean | undefined): ConfigState {
  return { ...config, values: replace ? { ...values } : { ...config.values, ...values } };
}

/** Directories are a set kept in insertion order. */
export function withDirectory<T extends { readonly workingDirectories?: readonly string[] }>(state: T, directory: string): T {
  const list = state.workingDirectories ?? [];
  return list.includes(directory) ? state : { ...state, workingDirectories: [...list, directory] };
}

export function withoutDirectory<T extends { readonly workingDirectories?: readonly string[] }>(state: T, directory: string): T {
  const list = state.workingDirectories;
  if (!list?.includes(directory)) return state;
  return { ...state, workingDirectories: list.filter((entry) => entry !== directory) };
}

/**
 * Finds a customization by id at the top level or one level down (a container's children) and
 * replaces it with `update(entry)`; the same state when the id is unknown or `update` declines.
 */
function updateCustomization(state: SessionState, id: string, update: (entry: Customization) => Customization): SessionState {
  const list = state.customizations;
  if (!list) return state;
  let changed = false;
  const apply = (entry: Customization): Customization => {
    const next = update(entry);
    if (next !== entry) changed = true;
    return next;
  };
  const top = list.findIndex((entry) => entry.id === id);
  const customizations =
    top !== -1
      ? list.map((entry, index) => (index === top ? apply(entry) : entry))
      : list.map((container) => {
          if (container.type === 'mcpServer' || !container.children?.some((child) => child.id === id)) return container;
          return { ...container, children: container.children.map((child) => (child.id === id ? apply(child) : child)) };
        });
  return changed ? { ...state, customizations } : state;
}

function updateMcpServer(state: SessionState, id: string, update: (entry: Customization) => Customization): SessionState {
  return updateCustomization(state, id, (entry) => (entry.type === 'mcpServer' ? update(entry) : entry));
}

function removeCustomization(state: SessionState, id: string): SessionState {
  const list = state.customizations;
  if (!list) return state;
  if (list.some((entry) => entry.id === id)) return { ...state, customizations: list.filter((entry) => entry.id !== id) };
  let changed = false;
  const customizations = list.map((container) => {
    if (container.type === 'mcpServer' || !container.children?.some((child) => child.id === id)) return container;
    changed = true;
    return { ...container, children: container.children.filter((child) => child.id !== id) };
  });
  return changed ? { ...state, customizations } : state;
}

/** Compile-time exhaustiveness: adding a host action without a case fails to type-check here. */
function unreachable(_action: never, state: SessionState): SessionState {
  return state;
}
