/**
 * The colour theme: follow the system (the default), or always light, or always dark. The choice
 * is kept in localStorage (per browser, not per account: it is about this screen). The stylesheet
 * does the rest: every colour is `light-dark(…)` of `color-scheme`, which is `light dark` (the
 * system's) unless `<html data-theme>` pins one (app.css). So "system" needs no script at all, and
 * follows a change of the system theme at once.
 */
import { el } from './dom.js';
import { applyTheme, isTheme, storedTheme, THEME_KEY, THEMES, type Theme } from './theme-store.js';

export { applyTheme, storedTheme };

/** Each label starts with its symbol: on a phone the closed menu is only as wide as the symbol (app.css). */
const LABELS: Record<Theme, string> = { system: '◐ System', light: '☀ Light', dark: '☾ Dark' };

function remember(theme: Theme): void {
  try {
    if (theme === 'system') localStorage.removeItem(THEME_KEY);
    else localStorage.setItem(THEME_KEY, theme);
  } catch {
    // storage disabled: the choice lasts as long as the page
  }
}

/**
 * The header's theme menu (system / light / dark). Choosing applies and remembers; a choice made
 * in another tab of this browser is followed here too (the `storage` event).
 */
export function themePicker(): HTMLSelectElement {
  const select = el(
    'select',
    {
      class: 'theme-pick',
      attrs: { 'data-testid': 'theme', 'aria-label': 'Colour theme' },
      title: 'Follow the system’s light or dark setting, or keep this browser light or dark',
      on: {
        change: () => {
          const theme = isTheme(select.value) ? select.value : 'system';
          applyTheme(theme);
          remember(theme);
        },
      },
    },
    ...THEMES.map((t) => el('option', { attrs: { value: t }, text: LABELS[t] })),
  );
  select.value = storedTheme();
  window.addEventListener('storage', (e) => {
    if (e.key !== THEME_KEY && e.key !== null) return;
    const theme = storedTheme();
    select.value = theme;
    applyTheme(theme);
  });
  return select;
}
