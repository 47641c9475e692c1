import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import { describeActionLogContract } from './action-log.contract.js';

// No reopen: nothing survives a MemoryActionLog, so the persistence cases are skipped.
describeActionLogContract('MemoryActionLog', async () => {
  const log = new MemoryActionLog();
  return { log, cleanup: () => log.close() };
});
