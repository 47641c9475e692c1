/** An in-memory `Connection` for driving the hub without sockets: records every frame it is sent. */
import type { ActionEnvelope } from '../../shared/protocol/messages.js';
import type { Connection } from '../../server/hub/connection.js';

export class FakeConnection implements Connection {
  readonly frames: string[] = [];
  closed: { code: number; reason: string } | undefined;
  bufferedAmount = 0;
  constructor(readonly id: string) {}
  send(text: string): void {
    this.frames.push(text);
  }
  close(code: number, reason: string): void {
    this.closed = { code, reason };
  }
  /** Every frame, parsed. */
  messages(): Array<Record<string, unknown>> {
    return this.frames.map((f) => JSON.parse(f) as Record<string, unknown>);
  }
  /** The `action` envelopes among the frames, in order. */
  envelopes(): ActionEnvelope[] {
    return this.messages()
      .filter((m) => m['method'] === 'action')
      .map((m) => m['params'] as ActionEnvelope);
  }
}
