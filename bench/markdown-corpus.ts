/**
 * Random agent-like markdown (paragraphs with inline marks, headings, fenced code with blank lines
 * inside, GitHub tables, bullet and numbered lists) and random splits of it into streamed deltas.
 * Seeded (scripts/prng.ts), so the browser benchmark and the e2e test stream the same text on
 * every run.
 */
const WORDS = ['agent', 'stream', 'delta', 'hub', 'render', 'frame', 'parse', 'token', 'chat', 'turn', 'part', 'socket', 'commit', 'log', 'state', 'reply', 'table', 'list', 'code', 'value'];

export function randomMarkdown(random: () => number, approxChars: number): string {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const int = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
  const words = (n: number): string => Array.from({ length: n }, () => pick(WORDS)).join(' ');
  const inline = (): string => {
    const w = words(int(3, 12));
    switch (int(0, 5)) {
      case 0:
        return `${w} **${words(2)}** ${words(3)}`;
      case 1:
        return `${w} \`${pick(WORDS)}()\` ${words(2)}`;
      case 2:
        return `${w} *${words(2)}* and [a link](https://example.com/${pick(WORDS)})`;
      case 3:
        return `${w} ~~${words(1)}~~ ${words(2)}`;
      default:
        return w;
    }
  };
  const blocks: string[] = [];
  let size = 0;
  while (size < approxChars) {
    let block: string;
    switch (int(0, 6)) {
      case 0:
        block = `${'#'.repeat(int(1, 3))} ${words(int(2, 5))}`;
        break;
      case 1: {
        const lines = Array.from({ length: int(2, 8) }, (_, i) => (i === 2 ? '' : `  const ${pick(WORDS)}${i} = ${int(0, 999)}; // ${words(2)}`));
        block = ['```ts', ...lines, '```'].join('\n');
        break;
      }
      case 2: {
        const cols = int(2, 4);
        const row = (): string => `| ${Array.from({ length: cols }, () => words(int(1, 2))).join(' | ')} |`;
        block = [row(), `|${' --- |'.repeat(cols)}`, ...Array.from({ length: int(1, 5) }, row)].join('\n');
        break;
      }
      case 3:
        block = Array.from({ length: int(2, 6) }, () => `- ${inline()}`).join('\n');
        break;
      case 4:
        block = Array.from({ length: int(2, 6) }, (_, i) => `${i + 1}. ${inline()}`).join('\n');
        break;
      default:
        block = Array.from({ length: int(1, 4) }, inline).join('\n');
    }
    blocks.push(block);
    size += block.length + 2;
  }
  return blocks.join('\n\n') + '\n';
}

/** Splits `text` at random points into chunks of 1..2×`meanChunk` characters. */
export function splitAtRandom(random: () => number, text: string, meanChunk: number): string[] {
  const chunks: string[] = [];
  for (let at = 0; at < text.length; ) {
    const len = 1 + Math.floor(random() * 2 * meanChunk);
    chunks.push(text.slice(at, at + len));
    at += len;
  }
  return chunks;
}
