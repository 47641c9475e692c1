/**
 * The JSON text of an action, built once per action object and reused by everything on the commit
 * path that needs it: the channel size budget (its length), the log record codec (the stored
 * column) and the envelope encoder (the wire). Actions are never mutated once decided (a change,
 * such as stamping an answer, makes a new object), so the text of an object never goes stale.
 * Keyed weakly: the text lives as long as the action does (the replay window, the pending batch).
 */
const texts = new WeakMap<object, string>();

export function actionJson(action: object): string {
  let text = texts.get(action);
  if (text === undefined) {
    text = JSON.stringify(action);
    texts.set(action, text);
  }
  return text;
}
