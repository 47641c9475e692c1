#!/usr/bin/env node
/**
 * `npx ahp-hub-cli run --url ws://HOST:PORT/ahp --session <id> -p "<text>" --output-format stream-json --input-format ndjson`
 * Exit codes: 0 success, 1 error, 2 usage, 3 token missing or invalid, 130 cancelled (see cli/headless.ts).
 */
import { parseArgs, UsageError, USAGE } from './args.js';
import { EXIT, runHeadless } from './headless.js';

async function main(): Promise<number> {
  let options: ReturnType<typeof parseArgs>;
  try {
    options = parseArgs(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n`);
      return EXIT.usage;
    }
    throw err;
  }
  if (options.command === 'help') {
    process.stdout.write(USAGE + '\n');
    return EXIT.success;
  }
  return runHeadless(options, {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    onInterrupt: (handler) => {
      process.on('SIGINT', handler);
      return () => process.off('SIGINT', handler);
    },
  });
}

main().then(
  (code) => {
    // Let stdout flush, then leave without waiting for stdin EOF.
    process.stdout.write('', () => process.exit(code));
  },
  (err: unknown) => {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(EXIT.error);
  },
);
