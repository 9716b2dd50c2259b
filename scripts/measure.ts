/**
 * The house's measures (issue 45): `src/` non-test lines, functions over 80 lines and classes
 * over 300 lines. `npx tsx scripts/measure.ts` prints them; nothing asserts on them.
 */
import ts from 'typescript';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

const files = execFileSync('git', ['ls-files', 'src/*.ts', 'src/**/*.ts'], { encoding: 'utf8' })
  .split('\n')
  .filter((file) => file && !file.endsWith('.test.ts'));
const functions: Array<[number, string]> = [];
const classes: Array<[number, string]> = [];
let lines = 0;
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  lines += text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const lineOf = (position: number) => source.getLineAndCharacterOfPosition(position).line + 1;
  const visit = (node: ts.Node): void => {
    const length = lineOf(node.getEnd()) - lineOf(node.getStart()) + 1;
    const where = `${file}:${lineOf(node.getStart())}`;
    if (ts.isFunctionLike(node) && 'body' in node && node.body && length > 80) {
      const name = node.name?.getText(source) ?? ts.SyntaxKind[node.kind];
      functions.push([length, `${where} ${name}`]);
    }
    if (ts.isClassDeclaration(node)) classes.push([length, `${where} ${node.name?.getText(source) ?? 'class'}`]);
    ts.forEachChild(node, visit);
  };
  visit(source);
}
const byLength = (a: [number, string], b: [number, string]) => b[0] - a[0];
console.log(`src/ non-test lines: ${lines} in ${files.length} files`);
console.log(`functions over 80 lines: ${functions.length}`);
for (const [length, where] of functions.sort(byLength)) console.log(`  ${length} ${where}`);
const large = classes.filter(([length]) => length > 300).sort(byLength);
console.log(`classes over 300 lines: ${large.length}`);
for (const [length, where] of large) console.log(`  ${length} ${where}`);
