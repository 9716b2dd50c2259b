import { describe, expect, it } from 'vitest';
import { applyEdits, normalizeRel } from './files';

describe('normalizeRel', () => {
  it.each([
    ['', '.'],
    ['   ', '.'],
    ['foo/bar', 'foo/bar'],
    ['/foo/bar', 'foo/bar'],
    ['//foo//bar', 'foo/bar'],
    ['./foo', 'foo'],
    ['foo\\bar', 'foo/bar'],
    ['a/../b', 'b'],
    ['a/../../b', '../b'],
  ])('%j → %j', (path, expected) => {
    expect(normalizeRel(path)).toBe(expected);
  });
});

describe('applyEdits', () => {
  it('applies edits in order, each on the result of the ones before; an empty newString deletes', () => {
    expect(
      applyEdits('one two three', [
        { oldString: 'one', newString: '1' },
        { oldString: '1 two', newString: '12' },
        { oldString: ' three', newString: '' },
      ]),
    ).toBe('12');
  });

  it('replaces every match only with replaceAll', () => {
    expect(() => applyEdits('a a a', [{ oldString: 'a', newString: 'b' }])).toThrow(
      'edit 1: oldString matches 3 locations; add surrounding context to make it unique, or set replaceAll=true',
    );
    expect(applyEdits('a a a', [{ oldString: 'a', newString: 'b', replaceAll: true }])).toBe('b b b');
  });

  it('refuses an empty oldString, identical strings and a missing oldString, naming the edit', () => {
    expect(() => applyEdits('x', [{ oldString: '', newString: 'y' }])).toThrow('edit 1: oldString is required');
    expect(() =>
      applyEdits('x', [
        { oldString: 'x', newString: 'y' },
        { oldString: 'y', newString: 'y' },
      ]),
    ).toThrow('edit 2: oldString and newString are identical');
    expect(() => applyEdits('x', [{ oldString: 'z', newString: 'y' }])).toThrow('edit 1: oldString not found in the file');
  });

  it('takes newString literally ($ patterns are not special)', () => {
    expect(applyEdits('price', [{ oldString: 'price', newString: "$& $' $1" }])).toBe("$& $' $1");
  });
});
