/**
 * An open form's shared session: the request's collaboration doc (a Y.Text per text question,
 * `x-collab/*`), who else views the form and which question each is editing (chips), their carets
 * drawn in the shared text answers, and this tab's own editing state and caret for the others.
 */
import { CollabDoc, presenceName } from './collab.js';
import type { AppContext } from './context.js';
import { el, replaceChildren } from './dom.js';
import type { Field } from './form-fields.js';
import type { DraftActivity } from './form-draft-sync.js';
import { colorFor } from './format.js';
import { resolveCursor, type RemoteMark, type SharedCursor } from './text-binding.js';

export class FormCollab {
  #doc: CollabDoc | undefined;
  #off: (() => void) | undefined;
  #editing: string | null = null;
  #cursor: SharedCursor | null = null;

  constructor(
    private readonly app: AppContext,
    private readonly channel: string,
    private readonly fields: ReadonlyMap<string, Field>,
    /** Teammates' presence is noted here too, for Submit's question (submit-guard.ts). */
    private readonly activity: DraftActivity,
    /** Where "Also here: …" is shown. */
    private readonly viewing: HTMLElement,
  ) {}

  /** The current doc (one per open form; replaced when the form is rebuilt). */
  get doc(): CollabDoc | undefined {
    return this.#doc;
  }

  /** Joins the request's doc; `changed` runs on every change of it while it is the current one's. */
  start(requestId: string, hasText: boolean, changed: (doc: CollabDoc) => void): void {
    const doc = new CollabDoc(this.app.client, this.channel, requestId);
    this.#doc = doc;
    doc.setPresence({ user: { name: this.app.user }, editing: this.#editing });
    this.#off = doc.onChange(() => {
      this.#renderPresence();
      this.renderCursors();
      if (this.#doc === doc) changed(doc);
    });
    doc
      .join()
      .then(() => {
        if (this.#doc !== doc || !hasText) return;
        for (const field of this.fields.values()) (field as Partial<{ bind(d: CollabDoc): void }>).bind?.(doc);
      })
      .catch(() => {
        // No collaboration (feature missing or request already resolved): drafts still sync.
      });
  }

  stop(): void {
    this.#off?.();
    this.#doc?.destroy();
    this.#doc = undefined;
  }

  setEditing(questionId: string | null): void {
    this.#editing = questionId;
    if (questionId === null || this.#cursor?.question !== questionId) this.#cursor = null;
    this.#publish();
  }

  setCursor(cursor: SharedCursor | null): void {
    if (cursor?.anchor === this.#cursor?.anchor && cursor?.head === this.#cursor?.head && cursor?.question === this.#cursor?.question) return;
    this.#cursor = cursor;
    this.#publish();
  }

  #publish(): void {
    this.#doc?.setPresence({ user: { name: this.app.user }, editing: this.#editing, cursor: this.#cursor });
  }

  /** Draws everyone else's caret and selection in the shared text answers. */
  renderCursors(): void {
    const doc = this.#doc;
    if (!doc) return;
    const others = doc.others();
    for (const [id, field] of this.fields) {
      if (!field.showCursors) continue;
      const marks: RemoteMark[] = [];
      for (const [, state] of others) {
        const cursor = state.cursor;
        if (!cursor || cursor.question !== id || typeof cursor.anchor !== 'string' || typeof cursor.head !== 'string') continue;
        const range = resolveCursor(doc.doc, cursor);
        if (!range) continue;
        const name = presenceName(state, this.app.devMode);
        marks.push({ name, color: colorFor(name), start: range[0], end: range[1] });
      }
      field.showCursors(marks);
    }
  }

  #renderPresence(): void {
    const doc = this.#doc;
    if (!doc) return;
    const others = doc.others();
    const who = (s: Parameters<typeof presenceName>[0]): string => presenceName(s, this.app.devMode);
    const chip = (name: string, extra = ''): HTMLElement => el('span', { class: 'chip', attrs: { style: `--c:${colorFor(name)}`, 'data-user': name }, text: name + extra });
    this.activity.notePresence(others.map(([, s]) => ({ name: who(s), question: s.editing })));
    replaceChildren(this.viewing, ...(others.length > 0 ? ['Also here: ', ...others.map(([, s]) => chip(who(s)))] : []));
    for (const [id, field] of this.fields) {
      const editors = others.filter(([, s]) => s.editing === id).map(([, s]) => who(s));
      replaceChildren(field.presence, ...editors.map((n) => chip(n, ' is editing')));
      field.el.classList.toggle('being-edited', editors.length > 0);
    }
  }
}
