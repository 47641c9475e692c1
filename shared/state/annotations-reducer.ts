/**
 * The annotations-channel reducer (AHP 0.8). Pure; unknown action types and actions naming an
 * unknown annotation or entry are no-ops that return the same state.
 */
import { isAnnotationsActionType, type AnnotationsAction } from '../protocol/actions.js';
import type { Annotation, AnnotationEntry, AnnotationsState } from '../protocol/state.js';
import { removeWhere, updateAt, upsertBy } from './collections.js';

export function annotationsReducer(state: AnnotationsState, action: AnnotationsAction | { readonly type: string }): AnnotationsState {
  if (!isAnnotationsActionType(action.type)) return state;
  try {
    return reduce(state, action as AnnotationsAction);
  } catch {
    // Only reachable with a known type whose payload skipped validation; see chatReducer.
    return state;
  }
}

const annotationIdOf = (annotation: Annotation): string => annotation.id;
const entryIdOf = (entry: AnnotationEntry): string => entry.id;

function reduce(state: AnnotationsState, action: AnnotationsAction): AnnotationsState {
  switch (action.type) {
    case 'annotations/set':
      return { ...state, annotations: upsertBy(state.annotations, action.annotation, annotationIdOf) };
    case 'annotations/updated':
      return updateAnnotation(state, action.annotationId, (annotation) => {
        const next: Annotation = { ...annotation };
        if (action.turnId !== undefined) next.turnId = action.turnId;
        if (action.resource !== undefined) next.resource = action.resource;
        if (action.range !== undefined) next.range = action.range;
        if (action.resolved !== undefined) next.resolved = action.resolved;
        return next;
      });
    case 'annotations/removed': {
      const annotations = removeWhere(state.annotations, (annotation) => annotation.id === action.annotationId);
      return annotations === state.annotations ? state : { ...state, annotations: [...annotations] };
    }
    case 'annotations/entrySet':
      return updateAnnotation(state, action.annotationId, (annotation) => ({
        ...annotation,
        entries: upsertBy(annotation.entries, action.entry, entryIdOf),
      }));
    case 'annotations/entryRemoved':
      return updateAnnotation(state, action.annotationId, (annotation) => {
        const entries = removeWhere(annotation.entries, (entry) => entry.id === action.entryId);
        return entries === annotation.entries ? annotation : { ...annotation, entries: [...entries] };
      });
    default:
      return unreachable(action, state);
  }
}

function updateAnnotation(state: AnnotationsState, annotationId: string, update: (annotation: Annotation) => Annotation): AnnotationsState {
  const index = state.annotations.findIndex((annotation) => annotation.id === annotationId);
  if (index === -1) return state;
  const annotations = updateAt(state.annotations, index, update);
  return annotations === state.annotations ? state : { ...state, annotations: [...annotations] };
}

/** Compile-time exhaustiveness: adding an annotations action without a case fails to type-check here. */
function unreachable(_action: never, state: AnnotationsState): AnnotationsState {
  return state;
}
