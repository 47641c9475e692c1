/** The seed-003 mid-turn input (steering) extension's names on ACP: the hub speaks them to hosted agents and the editor bridge answers them. */
export const STEERING_EXTENSION = {
  metaKey: 'tansr.com',
  capabilities: '_tansr.com/session/input_capabilities',
  steer: '_tansr.com/session/steer',
  status: '_tansr.com/session/input_status',
} as const;
