/**
 * The terminal-channel reducer (AHP 0.7+). Pure and clock-free (a command's `timestamp` comes in
 * its action); unknown action types are no-ops and return the same state.
 *
 * Output (`terminal/data`) goes to the running command while one is open, else it extends the
 * trailing unclassified part, else it starts a new one.
 */
import { isTerminalActionType, type TerminalAction } from '../protocol/actions.js';
import type { TerminalContentPart, TerminalState } from '../protocol/state.js';
import { withField } from './collections.js';

export function terminalReducer(state: TerminalState, action: TerminalAction | { readonly type: string }): TerminalState {
  if (!isTerminalActionType(action.type)) return state;
  try {
    return reduce(state, action as TerminalAction);
  } catch {
    // Only reachable with a known type whose payload skipped validation; see chatReducer.
    return state;
  }
}

function reduce(state: TerminalState, action: TerminalAction): TerminalState {
  switch (action.type) {
    case 'terminal/data':
      return { ...state, content: appendOutput(state.content, action.data) };
    case 'terminal/input':
      // Keystrokes for the host's process; what they cause comes back as `terminal/data`.
      return state;
    case 'terminal/resized':
      return { ...state, cols: action.cols, rows: action.rows };
    case 'terminal/claimed':
      return { ...state, claim: action.claim };
    case 'terminal/titleChanged':
      return { ...state, title: action.title };
    case 'terminal/cwdChanged':
      return { ...state, cwd: action.cwd };
    case 'terminal/exited':
      return withField(state, 'exitCode', action.exitCode);
    case 'terminal/cleared':
      return { ...state, content: [] };
    case 'terminal/commandDetectionAvailable':
      return { ...state, supportsCommandDetection: true };
    case 'terminal/commandExecuted': {
      const part: TerminalContentPart = {
        type: 'command',
        commandId: action.commandId,
        commandLine: action.commandLine,
        output: '',
        timestamp: action.timestamp,
        isComplete: false,
      };
      return { ...state, content: [...state.content, part], supportsCommandDetection: true };
    }
    case 'terminal/commandFinished':
      return { ...state, content: state.content.map((part) => finishCommand(part, action)) };
    default:
      return unreachable(action, state);
  }
}

function appendOutput(content: readonly TerminalContentPart[], data: string): TerminalContentPart[] {
  const last = content.at(-1);
  const head = content.slice(0, -1);
  if (last?.type === 'command' && !last.isComplete) return [...head, { ...last, output: last.output + data }];
  if (last?.type === 'unclassified') return [...head, { ...last, value: last.value + data }];
  return [...content, { type: 'unclassified', value: data }];
}

function finishCommand(part: TerminalContentPart, action: Extract<TerminalAction, { type: 'terminal/commandFinished' }>): TerminalContentPart {
  if (part.type !== 'command' || part.commandId !== action.commandId) return part;
  return { ...part, isComplete: true, exitCode: action.exitCode, durationMs: action.durationMs };
}

/** Compile-time exhaustiveness: adding a terminal action without a case fails to type-check here. */
function unreachable(_action: never, state: TerminalState): TerminalState {
  return state;
}
