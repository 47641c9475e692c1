/** `--tenant-disk-quota` / `HUB_TENANT_DISK_QUOTA`: sizes with binary suffixes, refused when unusable. */
import { describe, expect, it } from 'vitest';
import { ConfigError, parseArgs } from '../../server/config.js';

describe('--tenant-disk-quota', () => {
  it('reads bytes and k/m/g multiples from the flag or the environment; absent leaves the default', () => {
    expect(parseArgs(['--tenant-disk-quota', '4096'], {}).tenantDiskQuota).toBe(4096);
    expect(parseArgs(['--tenant-disk-quota', '512m'], {}).tenantDiskQuota).toBe(512 * 1024 * 1024);
    expect(parseArgs([], { HUB_TENANT_DISK_QUOTA: '2G' }).tenantDiskQuota).toBe(2 * 1024 ** 3);
    expect(parseArgs([], {}).tenantDiskQuota).toBeUndefined();
  });

  it('refuses sizes it cannot use, naming the flag', () => {
    for (const bad of ['0', '1.5g', '12 tb', 'lots', '99999999999999999g']) {
      expect(() => parseArgs(['--tenant-disk-quota', bad], {}), bad).toThrow(ConfigError);
      expect(() => parseArgs(['--tenant-disk-quota', bad], {}), bad).toThrow(/--tenant-disk-quota must be a positive size/);
    }
  });
});
