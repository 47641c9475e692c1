/**
 * The first markdown a page renders pays once for compiling `marked`'s patterns and the renderer's
 * code: 25–30 ms of CPU in the bench's cold open, inside the task that receives the chat's
 * snapshot and builds its newest turns (that task was the 1,000-turn open's longest, 51 ms of
 * CPU). A chat view renders a small sample of every block and inline kind into a detached
 * fragment, once per page, in a task of its own while it waits for the snapshot.
 */
import { renderMarkdown } from './markdown.js';

const SAMPLE = [
  '# Heading',
  'Some *emphasis*, **strong**, ~~gone~~, `code`, [a link](https://example.com) and https://example.com.',
  '- item\n- [x] done\n  1. nested',
  '> quoted\n> text',
  '```ts\nconst x = 1;\n```',
  '| a | b |\n|---|:-:|\n| 1 | 2 |',
  '---',
  'Line one  \nline two <b>raw</b> \\* escaped',
].join('\n\n');

let warmed = false;

/** Renders the sample in the next task (once per page): the first real render is then warm. */
export function warmMarkdown(): void {
  if (warmed) return;
  warmed = true;
  setTimeout(() => renderMarkdown(SAMPLE, document), 0);
}
