/** The ACP editor bridge cases. */
import type { ConformanceCase } from '../case-format.js';

export const ACP_BRIDGE_CASES: readonly ConformanceCase[] = [];
