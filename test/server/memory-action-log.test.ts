import { MemoryActionLog } from '../../server/storage/memory-action-log.js';
import { describeActionLogContract } from './action-log.contract.js';

// Not persistent: nothing survives a MemoryActionLog, so the close + reopen cases do not apply.
describeActionLogContract(
  'MemoryActionLog',
  async () => {
    const log = new MemoryActionLog();
    return { log, cleanup: () => log.close() };
  },
  { persistent: false },
);
