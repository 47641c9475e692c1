/**
 * The one formatter of zod validation issues into a readable line, used by action parsing and by
 * the JSON-RPC router. Two styles exist because clients already see both texts:
 * - `action` (the default): up to three issues, `path.to[2].field: message; …`, a failed union
 *   reported by the branch that got furthest (actions are open unions, "Invalid input" says nothing).
 * - `rpc`: the first issue only, `path.to.2.field: message` (JSON-RPC envelopes and method params).
 * Kept structural (no zod import) so it stays version-agnostic.
 */

/** The parts of a zod issue this formatter reads. */
export interface IssueLike {
  readonly path: ReadonlyArray<PropertyKey>;
  readonly message: string;
  readonly code?: string;
  readonly errors?: ReadonlyArray<ReadonlyArray<IssueLike>>;
}

export type IssueStyle = 'action' | 'rpc';

const MAX_REPORTED_ISSUES = 3;

/** One readable line describing `issues` in the given style. */
export function describeIssues(issues: ReadonlyArray<IssueLike>, style: IssueStyle = 'action'): string {
  if (style === 'rpc') {
    const first = issues[0];
    if (!first) return 'invalid value';
    return `${first.path.length > 0 ? first.path.join('.') : '(root)'}: ${first.message}`;
  }
  const lines = issues.slice(0, MAX_REPORTED_ISSUES).map((issue) => describeIssue(issue, []));
  const more = issues.length > MAX_REPORTED_ISSUES ? ` (+${issues.length - MAX_REPORTED_ISSUES} more)` : '';
  return lines.join('; ') + more;
}

function describeIssue(issue: IssueLike, prefix: ReadonlyArray<PropertyKey>): string {
  const path = [...prefix, ...issue.path];
  // A failed union says only "Invalid input"; report the branch that got furthest instead.
  // Ties go to the first branch, which for open unions is the known-kinds branch.
  const branch = issue.code === 'invalid_union' ? deepestBranch(issue.errors ?? []) : undefined;
  if (branch && branch.length > 0) return describeIssue(branch[0]!, path);
  return `${formatPath(path)}: ${issue.message}`;
}

function deepestBranch(branches: ReadonlyArray<ReadonlyArray<IssueLike>>): ReadonlyArray<IssueLike> | undefined {
  let best: ReadonlyArray<IssueLike> | undefined;
  let bestDepth = -1;
  for (const branch of branches) {
    const depth = Math.max(-1, ...branch.map((issue) => issue.path.length));
    if (depth > bestDepth) {
      best = branch;
      bestDepth = depth;
    }
  }
  return best;
}

function formatPath(path: ReadonlyArray<PropertyKey>): string {
  if (path.length === 0) return '(root)';
  return path.map((key, index) => (typeof key === 'number' ? `[${key}]` : `${index === 0 ? '' : '.'}${String(key)}`)).join('');
}
