/**
 * The changeset-channel reducer (AHP 0.8). Pure; unknown action types are no-ops. An `error`
 * belongs to the status that carries it: any other status (of the changeset or of an
 * operation) drops the previous error.
 */
import { isChangesetActionType, type ChangesetAction } from '../protocol/actions.js';
import type { ChangesetFile, ChangesetOperation, ChangesetState } from '../protocol/state.js';
import { removeWhere, updateAt, upsertBy, withField } from './collections.js';

export function changesetReducer(state: ChangesetState, action: ChangesetAction | { readonly type: string }): ChangesetState {
  if (!isChangesetActionType(action.type)) return state;
  try {
    return reduce(state, action as ChangesetAction);
  } catch {
    // Only reachable with a known type whose payload skipped validation; see chatReducer.
    return state;
  }
}

const fileIdOf = (file: ChangesetFile): string => file.id;

function reduce(state: ChangesetState, action: ChangesetAction): ChangesetState {
  switch (action.type) {
    case 'changeset/statusChanged':
      return withField({ ...state, status: action.status }, 'error', action.status === 'error' ? action.error : undefined);
    case 'changeset/fileSet':
      return { ...state, files: upsertBy(state.files, action.file, fileIdOf) };
    case 'changeset/fileRemoved': {
      const files = removeWhere(state.files, (file) => file.id === action.fileId);
      return files === state.files ? state : { ...state, files: [...files] };
    }
    case 'changeset/filesReviewChanged':
      return filesReviewChanged(state, new Set(action.files), action.reviewed);
    case 'changeset/contentChanged': {
      const next: ChangesetState = { ...state, files: [...action.files] };
      if (action.operations !== undefined) next.operations = [...action.operations];
      return withField(next, 'error', action.error);
    }
    case 'changeset/operationsChanged':
      return withField(state, 'operations', action.operations && [...action.operations]);
    case 'changeset/operationStatusChanged':
      return operationStatusChanged(state, action);
    case 'changeset/cleared':
      return state.files.length === 0 ? state : { ...state, files: [] };
    default:
      return unreachable(action, state);
  }
}

function filesReviewChanged(state: ChangesetState, ids: ReadonlySet<string>, reviewed: boolean): ChangesetState {
  if (!state.files.some((file) => ids.has(file.id) && file.reviewed !== reviewed)) return state;
  const files = state.files.map((file) => (ids.has(file.id) && file.reviewed !== reviewed ? { ...file, reviewed } : file));
  return { ...state, files };
}

function operationStatusChanged(state: ChangesetState, action: Extract<ChangesetAction, { type: 'changeset/operationStatusChanged' }>): ChangesetState {
  const operations = state.operations;
  if (!operations) return state;
  const index = operations.findIndex((operation) => operation.id === action.operationId);
  if (index === -1) return state;
  const next = updateAt(operations, index, (operation): ChangesetOperation => withField({ ...operation, status: action.status }, 'error', action.status === 'error' ? action.error : undefined));
  return { ...state, operations: [...next] };
}

/** Compile-time exhaustiveness: adding a changeset action without a case fails to type-check here. */
function unreachable(_action: never, state: ChangesetState): ChangesetState {
  return state;
}
