/**
 * Who has a chat open and visible: the app sets `visible` (from `document.visibilityState`) in
 * its presence state of the chat's presence room (`~chat`), and the hub stamps `user.id` over
 * whatever the tab claimed (collab-room.ts). Push notifications read it through this service,
 * so a person looking at the chat is not also notified on their phone.
 */
import { CHAT_PRESENCE_DOC } from '../../shared/protocol/collab.js';
import type { CollabRoom } from './collab-room.js';

export const COLLAB_PRESENCE_SERVICE = 'collab-presence';

export interface PresenceService {
  /** True when some tab of `user` is in the chat's presence room with `visible: true`. */
  viewingVisibly(chat: string, user: string): boolean;
}

export function presenceService(rooms: ReadonlyMap<string, CollabRoom>, keyOf: (channel: string, doc: string) => string): PresenceService {
  return {
    viewingVisibly(chat, user) {
      const room = rooms.get(keyOf(chat, CHAT_PRESENCE_DOC));
      if (!room) return false;
      for (const state of room.awareness.getStates().values()) {
        const s = state as { user?: { id?: unknown }; visible?: unknown };
        if (s.visible === true && s.user?.id === user) return true;
      }
      return false;
    },
  };
}
