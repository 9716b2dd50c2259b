import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { charge } from '../../test/fixtures/throwing-tools';
import type { ToolContext } from '../define';
import { PACKAGE_ROOT } from '../node/package-root';
import { thrownAt } from './thrown-at';

/** An error whose stack is these frames (innermost first). */
function thrownThrough(...frames: string[]): Error {
  const error = new Error('boom');
  error.stack = ['Error: boom', ...frames.map((frame) => `    at ${frame}`)].join('\n');
  return error;
}

const project = '/home/ada/shop';

describe('thrownAt', () => {
  it("names the first frame of the user's code, past Node's, a dependency's and keel's own", () => {
    const error = thrownThrough(
      'Object.assert (node:assert:400:11)',
      'validate (/home/ada/shop/node_modules/some-lib/index.js:10:5)',
      `withHeartbeat (${join(PACKAGE_ROOT, 'src', 'activities', 'heartbeat.ts')}:20:3)`,
      'chargeCard (/home/ada/shop/tools/pay.ts:12:9)',
      'Object.run (/home/ada/shop/tools/pay.ts:30:20)',
    );
    expect(thrownAt(error, { baseDir: project })).toBe('tools/pay.ts:12:9');
  });

  it('reads anonymous, async and file URL frames', () => {
    expect(thrownAt(thrownThrough('/home/ada/shop/tools/pay.ts:3:1'), { baseDir: project })).toBe('tools/pay.ts:3:1');
    expect(thrownAt(thrownThrough('async run (/home/ada/shop/pay.mjs:7:2)'), { baseDir: project })).toBe('pay.mjs:7:2');
    expect(thrownAt(thrownThrough(`run (${pathToFileURL('/home/ada/shop/pay.mjs').href}:8:4)`), { baseDir: project })).toBe('pay.mjs:8:4');
  });

  it('keeps a file outside the project absolute', () => {
    expect(thrownAt(thrownThrough('run (/srv/shared/tools.ts:4:2)'), { baseDir: project })).toBe('/srv/shared/tools.ts:4:2');
  });

  it("says nothing when no frame is the user's, or there is no stack", () => {
    expect(
      thrownAt(
        thrownThrough(`callTool (${join(PACKAGE_ROOT, 'dist', 'index.js')}:1:1)`, 'processTicksAndRejections (node:internal/process/task_queues:95:5)'),
        { baseDir: project },
      ),
    ).toBeUndefined();
    expect(thrownAt('a string', { baseDir: project })).toBeUndefined();
    expect(thrownAt(thrownThrough('<anonymous>'), { baseDir: project })).toBeUndefined();
  });

  it("finds the line a real tool module threw at, through keel's own frames", async () => {
    const error = await Promise.resolve()
      .then(() => charge.run({ amount: 1 }, {} as ToolContext))
      .catch((thrown: unknown) => thrown);
    const throwLine = readFileSync(join(PACKAGE_ROOT, 'test', 'fixtures', 'throwing-tools.ts'), 'utf8')
      .split('\n')
      .findIndex((line) => line.includes('throw new Error'));
    expect(thrownAt(error, { baseDir: PACKAGE_ROOT })).toBe(`test/fixtures/throwing-tools.ts:${throwLine + 1}:9`);
  });
});
