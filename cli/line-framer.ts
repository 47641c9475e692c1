/**
 * Splits a byte stream into text lines for the headless NDJSON control channel.
 *
 * - UTF-8 sequences split across reads are reassembled (a streaming decoder keeps the partial
 *   bytes); invalid bytes become U+FFFD (and the frame then fails JSON validation visibly).
 * - LF and CRLF both end a line; the CR of a CRLF is not part of the line.
 * - A last line without a newline is delivered by `end()`.
 * - A line longer than `maxLine` UTF-16 code units (not bytes; default 65,536) is reported once
 *   as `oversized` and its content is discarded up to the next newline, so memory stays bounded.
 * - Blank lines (empty or whitespace only) are skipped.
 */
import { StringDecoder } from 'node:string_decoder';

export const MAX_LINE_UNITS = 65_536;

export type FramerEvent = { readonly kind: 'line'; readonly line: string } | { readonly kind: 'oversized'; readonly length: number };

export class LineFramer {
  readonly #decoder = new StringDecoder('utf8');
  #buffer = '';
  /** Units of the current line seen so far while discarding it (oversized). */
  #discarding: number | undefined;

  constructor(readonly maxLine: number = MAX_LINE_UNITS) {}

  push(chunk: Buffer | string): FramerEvent[] {
    return this.#feed(typeof chunk === 'string' ? chunk : this.#decoder.write(chunk), false);
  }

  /** Flushes the decoder and delivers a final line that had no newline. */
  end(): FramerEvent[] {
    return this.#feed(this.#decoder.end(), true);
  }

  #feed(text: string, final: boolean): FramerEvent[] {
    const out: FramerEvent[] = [];
    let start = 0;
    for (;;) {
      const nl = text.indexOf('\n', start);
      if (nl === -1) break;
      this.#take(text.slice(start, nl), true, out);
      start = nl + 1;
    }
    this.#take(text.slice(start), final, out);
    return out;
  }

  /** Adds `piece` to the current line; `complete` = a line terminator (or EOF) follows it. */
  #take(piece: string, complete: boolean, out: FramerEvent[]): void {
    if (this.#discarding !== undefined) {
      this.#discarding += piece.length;
      if (complete) {
        out.push({ kind: 'oversized', length: this.#discarding - (piece.endsWith('\r') ? 1 : 0) });
        this.#discarding = undefined;
      }
      return;
    }
    this.#buffer += piece;
    if (complete) {
      let line = this.#buffer;
      this.#buffer = '';
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line.length > this.maxLine) out.push({ kind: 'oversized', length: line.length });
      else if (line.trim() !== '') out.push({ kind: 'line', line });
      return;
    }
    // Keep one extra unit so a trailing CR of a CRLF split across reads is not counted as content.
    if (this.#buffer.length > this.maxLine + 1) {
      this.#discarding = this.#buffer.length;
      this.#buffer = '';
    }
  }
}
