import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { screenLines } from '../../test/support/terminal';
import { promptLines } from './prompt-lines';

/** A terminal's two ends: what is typed, and everything written to it. */
function terminal(): { input: PassThrough; output: Writable & { isTTY: boolean; columns: number }; written: () => string } {
  let text = '';
  const output = Object.assign(
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += chunk.toString();
        done();
      },
    }),
    { isTTY: true, columns: 100 },
  );
  return { input: new PassThrough(), output, written: () => text };
}

describe('promptLines', () => {
  it('prints a line that comes while a question waits above the question, which is asked again below it', async () => {
    const { input, output, written } = terminal();
    const lines = promptLines(input, output);
    lines.say('  ⏸ book_train needs approval');
    const answer = lines.ask('    approve book_train? [y/N] ', new AbortController().signal);
    input.write('y');
    lines.say('  ⧗ background task fare (fare-scout) completed: about 27 USD');
    input.write('\n');
    expect(await answer).toBe('y');
    lines.say('    approved i1');
    expect(screenLines(written())).toEqual([
      '  ⏸ book_train needs approval',
      '  ⧗ background task fare (fare-scout) completed: about 27 USD',
      '    approve book_train? [y/N] y',
      '    approved i1',
      '',
    ]);
  });

  it('withdraws the question when its signal aborts, and prints plainly after', async () => {
    const { input, output, written } = terminal();
    const lines = promptLines(input, output);
    const stop = new AbortController();
    const answer = lines.ask('    approve book_train? [y/N] ', stop.signal);
    stop.abort();
    await expect(answer).rejects.toThrow();
    lines.say('\n    i1 was decided elsewhere');
    expect(screenLines(written())).toEqual(['    approve book_train? [y/N]', '', '    i1 was decided elsewhere', '']);
  });
});
