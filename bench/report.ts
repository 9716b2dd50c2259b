/**
 * How benchmarks report a figure: one `RESULT` line each (metric, value, goal), which
 * `npm run bench` (bench/all.ts) gathers into one table.
 */
export function result(metric: string, value: number, goal: string): void {
  const shown = Number.isInteger(value) ? String(value) : value.toFixed(value < 10 ? 3 : 1);
  console.log(`RESULT\t${metric}\t${shown}\t${goal}`);
}
