// A scripted ACP agent built on the official SDK's agent side, run as a real child process over
// stdio. Each prompt's text is a JSON script `{"steps": [...]}`; the agent performs the steps in
// order and reports what the client answered as agent text (`REPORT {...}`), so tests can check
// both directions of the mapping.
//
// Steps: {"update": SessionUpdate} · {"permission": {toolCall, options}} · {"elicit": params}
// · {"elicitComplete": elicitationId} · {"waitCancel": true} · {"stop": StopReason}
// · {"exit": code} · {"reportInit": true} · {"probe": {"paths": [...], "signal": [pids]}} · {"spawnChild": true} · {"awaitSteering": n} · {"elicit": params, "background": true} then
// {"awaitElicitation": true}; {"permission": …, "background": true} (several may be open at once) then
// {"awaitPermissions": true}; {"permissionBurst": {"count": n}} asks n at once (tool calls burst-0 …);
// {"error": {code, message, data}} fails the prompt with that JSON-RPC error (as Qwen Code reports a model it cannot
// reach: -32603 "Internal error", data.details "Connection error."); {"drain": true} asks the client `craft/drainMidTurnQueue` as Qwen Code does between tool batches
// and reports the answer (SCRIPTED_AGENT_NAME sets the agentInfo name, e.g. "qwen-code"). With SCRIPTED_AGENT_LOG set, every answer the client gives is also
// appended there as a JSON line (answers that arrive after a turn was cancelled are seen only there).
import { spawn } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';

let initParams;
let sessionCounter = 0;
const cancelWaiters = new Map();

// The seed-003 mid-turn input extension, offered when SCRIPTED_AGENT_STEERING=1: inputs for the
// running prompt are held as `accepted` until an {"awaitSteering": n} step consumes them.
const steering = process.env.SCRIPTED_AGENT_STEERING === '1';
let promptCounter = 0;
let runningTarget;
const inputs = new Map();
const inputWaiters = new Set();
const asRecord = (p) => (typeof p === 'object' && p !== null ? p : {});

const app = acp
  .agent({ name: 'scripted-agent' })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    initParams = params;
    // SCRIPTED_AGENT_START=initError: an agent that cannot start (its configuration is broken).
    if (process.env.SCRIPTED_AGENT_START === 'initError') throw new acp.RequestError(-32603, 'Internal error', { details: 'No model is configured: set OPENAI_MODEL.' });
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentInfo: { name: process.env.SCRIPTED_AGENT_NAME ?? 'scripted-agent', version: '1.0.0' },
      agentCapabilities: { loadSession: process.env.SCRIPTED_AGENT_LOAD === '1', ...(steering && { _meta: { 'tansr.com': { midTurnInput: 1 } } }) },
    };
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    sessionCounter += 1;
    process.stderr.write(`scripted agent: new session in ${params.cwd}\n`);
    return { sessionId: `scripted-${process.pid}-${sessionCounter}` };
  })
  .onRequest(acp.methods.agent.session.load, ({ params }) => {
    process.stderr.write(`scripted agent: load session ${params.sessionId}\n`);
    return {};
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    const waiter = cancelWaiters.get(params.sessionId);
    cancelWaiters.delete(params.sessionId);
    waiter?.();
  })
  .onRequest('_tansr.com/session/input_capabilities', asRecord, () => ({ version: 1, target: runningTarget ?? null }))
  .onRequest('_tansr.com/session/steer', asRecord, ({ params }) => {
    if (!runningTarget || params.target?.turnId !== runningTarget.turnId) return { outcome: 'closed', code: 'turn_closed' };
    const receipt = { inputId: params.inputId, state: 'accepted', ordinal: inputs.size + 1, text: params.content?.text };
    inputs.set(params.inputId, receipt);
    for (const w of inputWaiters) w();
    return { outcome: 'accepted', receipt };
  })
  .onRequest('_tansr.com/session/input_status', asRecord, ({ params }) => ({ receipt: inputs.get(params.inputId) ?? null }))
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const sessionId = params.sessionId;
    runningTarget = { historyEpoch: 'agent-epoch', turnId: `agent-turn-${++promptCounter}` };
    const done = (response) => {
      runningTarget = undefined;
      return response;
    };
    const text = params.prompt.map((b) => (b.type === 'text' ? b.text : '')).join('');
    let script;
    try {
      script = JSON.parse(text);
    } catch {
      script = { steps: [{ update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `echo: ${text}` } } }] };
    }
    const cancelled = new Promise((resolve) => cancelWaiters.set(sessionId, resolve));
    let background;
    const backgroundPermissions = [];
    const report = (value) => {
      if (process.env.SCRIPTED_AGENT_LOG) appendFileSync(process.env.SCRIPTED_AGENT_LOG, JSON.stringify(value) + '\n');
      return client.notify(acp.methods.client.session.update, {
        sessionId,
        update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `\nREPORT ${JSON.stringify(value)}\n` } },
      });
    };
    for (const step of script.steps ?? []) {
      if (step.update) await client.notify(acp.methods.client.session.update, { sessionId, update: step.update });
      else if (step.permission && step.background) {
        backgroundPermissions.push(client.request(acp.methods.client.session.requestPermission, { sessionId, ...step.permission }));
      } else if (step.permissionBurst) {
        // `count` permission requests at once (tool calls burst-0 …), answered by a later awaitPermissions.
        for (let i = 0; i < step.permissionBurst.count; i++) {
          const toolCall = { toolCallId: `burst-${i}`, title: `Write burst-${i}` };
          backgroundPermissions.push(client.request(acp.methods.client.session.requestPermission, { sessionId, toolCall, options: [{ optionId: 'ok', name: 'Allow', kind: 'allow_once' }] }));
        }
      } else if (step.awaitPermissions) {
        const answers = await Promise.all(backgroundPermissions.splice(0));
        await report({ permissions: answers.map((a) => a.outcome) });
      } else if (step.permission) {
        const answer = await client.request(acp.methods.client.session.requestPermission, { sessionId, ...step.permission });
        await report({ permission: answer.outcome });
      } else if (step.elicit && step.background) {
        background = client.request(acp.methods.client.elicitation.create, { sessionId, ...step.elicit });
      } else if (step.awaitElicitation) {
        await report({ elicitation: await background });
      } else if (step.elicit) {
        const answer = await client.request(acp.methods.client.elicitation.create, { sessionId, ...step.elicit });
        await report({ elicitation: answer });
      } else if (step.elicitComplete) {
        await client.notify(acp.methods.client.elicitation.complete, { elicitationId: step.elicitComplete });
      } else if (step.waitCancel) {
        await cancelled;
        return done({ stopReason: 'cancelled' });
      } else if (step.spawnChild) {
        // A long-lived child of the agent (as agents start tools or re-launch themselves).
        const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
        await report({ childPid: child.pid });
      } else if (step.awaitSteering) {
        while ([...inputs.values()].filter((r) => r.state === 'accepted').length < step.awaitSteering) {
          await new Promise((resolve) => {
            inputWaiters.add(resolve);
          });
          inputWaiters.clear();
        }
        const taken = [...inputs.values()].filter((r) => r.state === 'accepted');
        for (const r of taken) r.state = 'consumed';
        await report({ steered: taken.map((r) => r.text) });
      } else if (step.probe) {
        // What this process can reach: its whole environment, who it runs as, where, and which of
        // the named paths it can read (a file's bytes or a directory's listing).
        const reads = {};
        for (const path of step.probe.paths ?? []) {
          try {
            if (statSync(path).isDirectory()) readdirSync(path);
            else readFileSync(path);
            reads[path] = 'readable';
          } catch (err) {
            reads[path] = err.code ?? String(err);
          }
        }
        // And which of the named processes it can stop (SIGSTOP, then SIGCONT to undo it at once).
        const signals = {};
        for (const pid of step.probe.signal ?? []) {
          try {
            process.kill(pid, 'SIGSTOP');
            process.kill(pid, 'SIGCONT');
            signals[pid] = 'stopped';
          } catch (err) {
            signals[pid] = err.code ?? String(err);
          }
        }
        await report({ probe: { env: process.env, uid: process.getuid?.(), gid: process.getgid?.(), groups: process.getgroups?.(), cwd: process.cwd(), reads, signals } });
      } else if (step.drain) {
        try {
          await report({ drained: await client.request('craft/drainMidTurnQueue', { sessionId }) });
        } catch (err) {
          await report({ drainError: err.code ?? String(err) });
        }
      } else if (step.reportInit) {
        await report({ clientCapabilities: initParams?.clientCapabilities ?? null });
      } else if (step.exit !== undefined) {
        process.stderr.write('scripted agent: exiting on request\n');
        process.exit(step.exit);
      } else if (step.error) {
        throw new acp.RequestError(step.error.code, step.error.message, step.error.data);
      } else if (step.stop) {
        return done({ stopReason: step.stop });
      }
    }
    cancelWaiters.delete(sessionId);
    return done({ stopReason: 'end_turn' });
  });

// SCRIPTED_AGENT_SLOW_EXIT=1: an agent slow to stop, which ignores SIGTERM and a closed stdin
// and exits only when killed (the hub sends SIGKILL 3 s after SIGTERM).
const slowExit = process.env.SCRIPTED_AGENT_SLOW_EXIT === '1';
// SCRIPTED_AGENT_START=exit: says why on stderr and exits before answering anything.
if (process.env.SCRIPTED_AGENT_START === 'exit') {
  process.stderr.write('scripted agent: cannot read settings.json: unexpected token\n');
  process.exit(3);
}
if (slowExit) process.on('SIGTERM', () => {});
const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = app.connect(stream);
await connection.closed;
if (slowExit) setInterval(() => {}, 1_000);
