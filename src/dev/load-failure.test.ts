/** `keel dev`'s one line for a worker that failed to load, from the messages workers really give. */
import { describe, expect, it } from 'vitest';
import { loadFailureLine } from './load-failure';

describe('the line for a load failure', () => {
  it('names the file, line and column of a syntax error, even in an imported file', () => {
    const message =
      'modules[0]: cannot load /p/agents.ts: Transform failed with 1 error:\n/p/lib/helper.ts:7:0: ERROR: Expected identifier but found end of file';
    expect(loadFailureLine(message)).toEqual({ line: '/p/lib/helper.ts:7:0: Expected identifier but found end of file', file: '/p/lib/helper.ts' });
  });

  it('names the importer of a module that is not found, without the require stack', () => {
    const message =
      "modules[0]: cannot load /p/agents.ts: Cannot find module './missing'\nRequire stack:\n- /p/lib/helper.ts\n- /p/agents.ts\n- /k/src/worker/load-registry.ts";
    expect(loadFailureLine(message)).toEqual({
      line: "modules[0]: cannot load /p/agents.ts: Cannot find module './missing' (imported by /p/lib/helper.ts)",
      file: '/p/lib/helper.ts',
    });
  });

  it('keeps a module that throws at import, or a config error, on one line naming its file', () => {
    expect(loadFailureLine('modules[1]: cannot load /p/tools.ts: boom\nat import')).toEqual({
      line: 'modules[1]: cannot load /p/tools.ts: boom at import',
      file: '/p/tools.ts',
    });
    expect(loadFailureLine('/p/temporal.yaml (line 3): not valid YAML: bad indentation')).toEqual({
      line: '/p/temporal.yaml (line 3): not valid YAML: bad indentation',
      file: '/p/temporal.yaml',
    });
  });
});
