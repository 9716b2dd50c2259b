import { describe, expect, it } from 'vitest';
import { KeelError } from '../../core/errors';
import type { Message } from '../../core/messages';
import { agents, delegationToolName, forwardedHistory, sharedToolName } from './agents';
import { parseTaskId } from '../../core/tasks';
import { injectSystemText } from '../../middleware/system-text';

const configError = (config: unknown) => {
  try {
    agents(config as Parameters<typeof agents>[0]);
  } catch (error) {
    return KeelError.isInstance(error) ? `${error.status}: ${error.message}` : String(error);
  }
  return undefined;
};

describe('agents config', () => {
  it('rejects no agents, an empty name and duplicate names, naming both owners', () => {
    expect(configError({ agents: [] })).toBe('INVALID_ARGUMENT: invalid config for middleware "agents": config.agents: list at least one agent');
    expect(configError({ agents: [''] })).toBe('INVALID_ARGUMENT: invalid config for middleware "agents": config.agents[0]: an agent name must not be empty');
    expect(configError({ agents: ['researcher', { name: 'researcher' }] })).toBe(
      'INVALID_ARGUMENT: invalid config for middleware "agents": config.agents: tool name "delegate_to_researcher" is claimed by agent "researcher" and by agent "researcher"',
    );
    expect(configError({ agents: ['a'], maxDelegations: -1 })).toContain('config.maxDelegations');
    expect(configError({ agents: ['a'], maxWaitSeconds: -1 })).toBe(
      'INVALID_ARGUMENT: invalid config for middleware "agents": config.maxWaitSeconds: must not be negative',
    );
    expect(configError({ agents: ['check_background_tasks'], toolPrefix: '', async: true })).toBe(
      'INVALID_ARGUMENT: invalid config for middleware "agents": config.agents: tool name "check_background_tasks" is claimed by agent "check_background_tasks" and by the background-task tools',
    );
  });

  it('round-trips through JSON: the ref is the plain config a YAML file would hold', () => {
    const ref = agents({ agents: ['researcher', { name: 'coder', description: 'Writes code.' }], maxDelegations: 2 });
    expect(JSON.parse(JSON.stringify(ref))).toEqual({
      name: 'agents',
      config: {
        agents: [{ name: 'researcher' }, { name: 'coder', description: 'Writes code.' }],
        maxDelegations: 2,
        historyLength: 0,
        artifactStrategy: 'inline',
        async: false,
        maxWaitSeconds: 0,
      },
    });
    expect(agents.definition.configSchema.safeParse(ref.config).success).toBe(true);
  });
});

describe('tool names', () => {
  it('prefixes delegation tools with delegate_to by default, a prefix of your own, or none', () => {
    expect(delegationToolName(undefined, 'researcher')).toBe('delegate_to_researcher');
    expect(delegationToolName('ask', 'researcher')).toBe('ask_researcher');
    expect(delegationToolName('', 'researcher')).toBe('researcher');
  });

  it('parses a task id by the longest configured agent name', () => {
    expect(parseTaskId('a:b:run-1', ['a', 'a:b'])).toEqual({ agent: 'a:b', runId: 'run-1' });
    expect(parseTaskId('a:run-1', ['a', 'a:b'])).toEqual({ agent: 'a', runId: 'run-1' });
    expect(parseTaskId('ghost:1', ['a'])).toBeUndefined();
    expect(parseTaskId('a:', ['a'])).toBeUndefined();
  });

  it('prefixes shared tools only with an explicit, non-empty prefix', () => {
    expect(sharedToolName(undefined, 'check_background_tasks')).toBe('check_background_tasks');
    expect(sharedToolName('', 'check_background_tasks')).toBe('check_background_tasks');
    expect(sharedToolName('research', 'check_background_tasks')).toBe('research_check_background_tasks');
  });
});

describe('forwarded history', () => {
  it('keeps the text of the last user and model messages, dropping tool traffic and empty messages', () => {
    const messages: Message[] = [
      { role: 'system', content: [{ text: 'system' }] },
      { role: 'user', content: [{ text: 'one' }] },
      { role: 'model', content: [{ text: 'two' }, { toolRequest: { name: 't', ref: '0', input: {} } }] },
      { role: 'tool', content: [{ toolResponse: { name: 't', ref: '0', output: 1 } }] },
      { role: 'model', content: [{ toolRequest: { name: 't', ref: '1', input: {} } }] },
      { role: 'user', content: [{ text: 'three' }] },
    ];
    expect(forwardedHistory(messages, 2)).toEqual([
      { role: 'model', content: [{ text: 'two' }] },
      { role: 'user', content: [{ text: 'three' }] },
    ]);
    expect(forwardedHistory(messages, 0)).toEqual([]);
  });
});

describe('injectSystemText', () => {
  const marker = 'listing';
  it('appends to the first system message, refreshes in place, and never duplicates', () => {
    const start: Message[] = [
      { role: 'system', content: [{ text: 'be brief' }] },
      { role: 'user', content: [{ text: 'hi' }] },
    ];
    const once = injectSystemText(start, marker, 'v1');
    expect(once[0]).toEqual({ role: 'system', content: [{ text: 'be brief' }, { text: 'v1', metadata: { listing: true } }] });
    const again = injectSystemText(once, marker, 'v1');
    expect(again).toEqual(once);
    const changed = injectSystemText(again, marker, 'v2');
    expect(changed[0]!.content).toEqual([{ text: 'be brief' }, { text: 'v2', metadata: { listing: true } }]);
    expect(start[0]!.content).toHaveLength(1);
  });

  it('puts a system message at the front when there is none', () => {
    expect(injectSystemText([{ role: 'user', content: [{ text: 'hi' }] }], marker, 'v1')[0]).toEqual({
      role: 'system',
      content: [{ text: 'v1', metadata: { listing: true } }],
    });
  });
});
