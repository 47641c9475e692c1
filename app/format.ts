/** Status labels, relative times and other small display helpers. */
import { SessionStatus, activityOf, hasBit } from '../shared/protocol/state.js';

export type StatusLabel = 'Idle' | 'In progress' | 'Needs input' | 'Error';

export function statusLabel(status: number): StatusLabel {
  const activity = activityOf(status);
  if (activity === SessionStatus.Error) return 'Error';
  if (hasBit(activity, 16)) return 'Needs input';
  if (hasBit(activity, 8)) return 'In progress';
  return 'Idle';
}

export function statusClass(label: StatusLabel): string {
  return 'status status-' + label.toLowerCase().replace(/\s+/g, '-');
}

export function relativeTime(iso: string | undefined, now = Date.now()): string {
  if (!iso) return '';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const s = Math.round((now - t) / 1000);
  if (s < 10) return 'just now';
  if (s < 60) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 24) return `${h} h ago`;
  return new Date(t).toLocaleDateString();
}

export function sessionIdOf(uri: string): string {
  return uri.replace(/^ahp-session:\//, '');
}

export function newId(): string {
  return crypto.randomUUID();
}

/** A stable colour for a person (presence chips). */
export function colorFor(name: string): string {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return `hsl(${h % 360} 60% 42%)`;
}
