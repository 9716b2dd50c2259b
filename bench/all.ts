/**
 * `npm run bench`: every benchmark, one after another (each on a fresh embedded dev
 * server), and one table of their figures with the goals. Each benchmark prints `RESULT`
 * lines (bench/report.ts); their other output is shown as it comes. Not a test.
 */
import { spawnSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';

const BENCHES = [
  'overhead.ts',
  'throughput.ts',
  'recovery.ts',
  'peer.ts',
  'long-run.ts',
  'compression.ts',
  'tree-budget.ts',
  'ui-inbox.ts',
  'many-waiting.ts',
  'cached-memory.ts',
  'thread-start.ts',
  'protocols.ts',
  'chat.ts',
  'notify.ts',
  'tenants.ts',
  'ledger.ts',
  'profile.ts',
];

const rows: string[][] = [];
for (const bench of BENCHES) {
  console.log(`\n== ${bench}`);
  const started = Date.now();
  const run = spawnSync(process.execPath, [join(__dirname, '..', 'node_modules', 'tsx', 'dist', 'cli.mjs'), join(__dirname, bench)], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  for (const line of (run.stdout ?? '').split('\n')) {
    if (line.startsWith('RESULT\t')) rows.push(line.split('\t').slice(1));
    else if (line) console.log(line);
  }
  if (run.status !== 0) {
    console.log(`${bench} failed (exit ${run.status}):\n${(run.stderr ?? '').slice(-2000)}`);
    rows.push([`${bench} failed`, '-', '-', 'no']);
  }
  console.log(`(${((Date.now() - started) / 1000).toFixed(0)} s)`);
}

const HEADER = ['metric', 'value', 'goal', 'met'];
const width = HEADER.map((name, column) => Math.max(...rows.map((row) => (row[column] ?? '').length), name.length));
const line = (cells: string[]) => `| ${HEADER.map((_, column) => (cells[column] ?? '').padEnd(width[column]!)).join(' | ')} |`;
console.log(
  `\nkeel benchmarks, ${new Date().toISOString().slice(0, 10)}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}\n`,
);
console.log(line(HEADER));
console.log(`|${width.map((size) => '-'.repeat(size + 2)).join('|')}|`);
for (const row of rows) console.log(line(row));
