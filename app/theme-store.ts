/**
 * The remembered colour theme and how a page shows it: no imports, so the tiny script that runs
 * before the first paint (`theme-boot.ts`, built to `/theme-boot.js`) and the header's menu
 * (`theme.ts`) share it. `<html data-theme>` pins light or dark; without it the stylesheet follows
 * the system (app.css).
 */
export const THEMES = ['system', 'light', 'dark'] as const;
export type Theme = (typeof THEMES)[number];

export const THEME_KEY = 'ahp-hub-theme';

export function isTheme(value: unknown): value is Theme {
  return typeof value === 'string' && (THEMES as readonly string[]).includes(value);
}

/** The remembered theme; "system" when none is kept, storage is off, or it holds something else. */
export function storedTheme(): Theme {
  try {
    const value = localStorage.getItem(THEME_KEY);
    return isTheme(value) ? value : 'system';
  } catch {
    return 'system';
  }
}

/** Shows `theme` on this page. */
export function applyTheme(theme: Theme, root: HTMLElement = document.documentElement): void {
  if (theme === 'system') root.removeAttribute('data-theme');
  else root.setAttribute('data-theme', theme);
}
