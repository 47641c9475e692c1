/**
 * Runs as a classic script in <head>, before the stylesheet is applied to anything: a theme the
 * person pinned is on <html> before the first paint. The app's bundle is a module (deferred), so
 * setting it there alone drew the boot page in the system's theme first.
 */
import { applyTheme, storedTheme } from './theme-store.js';

applyTheme(storedTheme());
