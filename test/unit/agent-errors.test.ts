/** Reading the cause out of a failing ACP agent's answer (server/agents/acp/agent-errors.ts). */
import { describe, expect, it } from 'vitest';
import { agentErrorDetail, failureFromAgentError, modelEndpointOf } from '../../server/agents/acp/agent-errors.js';

describe('agent errors', () => {
  it('finds the cause in the shapes agents use for JSON-RPC error data', () => {
    expect(agentErrorDetail({ details: 'Connection error.' })).toBe('Connection error.');
    expect(agentErrorDetail('quota exceeded')).toBe('quota exceeded');
    expect(agentErrorDetail({ error: { message: 'invalid api key' } })).toBe('invalid api key');
    expect(agentErrorDetail({ code: 7 })).toBeUndefined();
    expect(agentErrorDetail(undefined)).toBeUndefined();
    expect(agentErrorDetail({ details: 'x'.repeat(5_000) })!.length).toBeLessThanOrEqual(1_001);
  });

  it('names the model endpoint without credentials or query', () => {
    expect(modelEndpointOf({ OPENAI_BASE_URL: 'https://user:secret@llm.internal/v1?key=abc' })).toBe('https://llm.internal/v1');
    expect(modelEndpointOf({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:4000/' })).toBe('http://127.0.0.1:4000');
    expect(modelEndpointOf({ OPENAI_BASE_URL: 'not a url' })).toBeUndefined();
    expect(modelEndpointOf({})).toBeUndefined();
  });

  it('tells a model it could not reach from other failures, and a refused start from a failed turn', () => {
    const unreachable = failureFromAgentError('session/prompt', { code: -32603, message: 'Internal error', data: { details: 'Connection error.' } }, 'http://127.0.0.1:9/v1');
    expect(unreachable.errorType).toBe('modelUnreachable');
    expect(unreachable.message).toBe('The agent could not reach its model at http://127.0.0.1:9/v1: Connection error. (session/prompt failed: Internal error, JSON-RPC -32603).');
    const bare = failureFromAgentError('session/prompt', { code: -32603, message: 'Internal error' }, undefined);
    expect(bare).toMatchObject({ errorType: 'agentError', message: 'The agent failed on session/prompt: Internal error (JSON-RPC -32603).' });
    const refused = failureFromAgentError('initialize', { code: -32000, message: 'Authentication required' }, undefined, true);
    expect(refused).toMatchObject({ errorType: 'agentStartFailed', message: 'The agent could not be started: it refused initialize: Authentication required (JSON-RPC -32000).' });
  });
});
