import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config/load';
import type { ScriptedModel } from '../models/scripted';
import { loadRegistry, modelFromConfig } from './load-registry';

describe('loading a worker’s registry', () => {
  it('says what a module threw at import, also when it is not an Error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-modules-'));
    writeFileSync(join(dir, 'string.js'), "throw 'the database is not up';\n");
    writeFileSync(join(dir, 'object.js'), 'throw { code: 42, reason: "nope" };\n');
    writeFileSync(join(dir, 'error.js'), "throw new Error('a real error');\n");
    const load = (module: string) => loadRegistry(parseConfig({ modules: [module] }, { baseDir: dir, env: {} }));
    await expect(load('./string.js')).rejects.toThrow(`modules[0]: cannot load ${join(dir, 'string.js')}: it threw 'the database is not up' (not an Error)`);
    await expect(load('./object.js')).rejects.toThrow("it threw { code: 42, reason: 'nope' } (not an Error)");
    await expect(load('./error.js')).rejects.toThrow(`cannot load ${join(dir, 'error.js')}: a real error`);
  });

  it('keeps none of the requests a scripted model declared in the config was sent', async () => {
    const model = modelFromConfig({ name: 'scripted/yaml', provider: 'scripted', script: [{ text: 'a' }, { text: 'b' }] }) as ScriptedModel;
    const context = { runId: 'r', heartbeat: () => undefined, signal: new AbortController().signal, stream: () => undefined };
    await model.generate({ messages: [{ role: 'user', content: [{ text: 'hi' }] }], tools: [] }, { ...context, callIndex: 0 });
    await model.generate({ messages: [{ role: 'user', content: [{ text: 'hi' }] }], tools: [] }, { ...context, callIndex: 1 });
    expect(model.requests).toEqual([]);
  });
});
