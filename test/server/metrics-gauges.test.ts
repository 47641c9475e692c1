/**
 * Every tenant's stack registers the same gauges (its subscriptions, its features' SSE listeners…);
 * `/metrics` must report one series per gauge holding their sum, not fail on the second name.
 */
import { describe, expect, it } from 'vitest';
import { HubMetrics } from '../../server/metrics.js';

describe('HubMetrics gauges', () => {
  it('sums the readers registered under one name, read at scrape time', async () => {
    const metrics = new HubMetrics();
    let acme = 3;
    metrics.gauge('ahp_hub_subscriptions', 'Channel subscriptions held by all connections.', () => acme);
    metrics.gauge('ahp_hub_subscriptions', 'Channel subscriptions held by all connections.', () => 4);
    expect((await metrics.render()).text).toMatch(/^ahp_hub_subscriptions 7$/m);
    acme = 10;
    expect((await metrics.render()).text).toMatch(/^ahp_hub_subscriptions 14$/m);
  });
});
