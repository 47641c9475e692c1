/**
 * Command-line configuration: the only reader of argv and the environment. Flags:
 * --host (127.0.0.1), --port (8787; 0 = any free port), --data (./data), --auth FILE,
 * --log-level (info), --sync normal|full (SQLite durability level).
 */
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import type { LogLevel } from './log.js';

export interface CliConfig {
  host: string;
  port: number;
  dataDir: string;
  authFile: string | undefined;
  logLevel: LogLevel;
  sync: 'normal' | 'full';
}

export class ConfigError extends Error {}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || (isIP(host) === 4 && host.startsWith('127.'));
}

export function parseArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): CliConfig {
  const config: CliConfig = {
    host: env['HUB_HOST'] ?? '127.0.0.1',
    port: env['HUB_PORT'] ? Number(env['HUB_PORT']) : 8787,
    dataDir: env['HUB_DATA'] ?? './data',
    authFile: env['HUB_AUTH'] || undefined,
    logLevel: (env['HUB_LOG_LEVEL'] as LogLevel | undefined) ?? 'info',
    sync: 'normal',
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const [name, inline] = flag.includes('=') ? [flag.slice(0, flag.indexOf('=')), flag.slice(flag.indexOf('=') + 1)] : [flag, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === '') throw new ConfigError(`${name} needs a value`);
      return v;
    };
    switch (name) {
      case '--host':
        config.host = value();
        break;
      case '--port':
        config.port = Number(value());
        break;
      case '--data':
        config.dataDir = value();
        break;
      case '--auth':
        config.authFile = value();
        break;
      case '--log-level':
        config.logLevel = value() as LogLevel;
        break;
      case '--sync':
        config.sync = value() as 'normal' | 'full';
        break;
      case '--help':
        throw new ConfigError(USAGE);
      default:
        throw new ConfigError(`unknown flag ${name}\n${USAGE}`);
    }
  }
  if (!Number.isInteger(config.port) || config.port < 0 || config.port > 65535) throw new ConfigError('--port must be an integer from 0 to 65535');
  if (!['debug', 'info', 'warn', 'error'].includes(config.logLevel)) throw new ConfigError('--log-level must be debug, info, warn or error');
  if (config.sync !== 'normal' && config.sync !== 'full') throw new ConfigError('--sync must be normal or full');
  if (!config.authFile && !isLoopback(config.host)) {
    throw new ConfigError(`refusing to listen on ${config.host} without --auth: dev mode (no tokens) is loopback-only`);
  }
  config.dataDir = resolve(config.dataDir);
  return config;
}

export const USAGE = `usage: npm start -- [--host 127.0.0.1] [--port 8787] [--data ./data] [--auth tokens.json] [--log-level info] [--sync normal|full]`;
