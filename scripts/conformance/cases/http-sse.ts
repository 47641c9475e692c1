/** The qwen / DataWorks HTTP and SSE cases. */
import type { ConformanceCase } from '../case-format.js';

export const HTTP_SSE_CASES: readonly ConformanceCase[] = [];
