/**
 * How benchmarks report a figure: one `RESULT` line each (metric, value, goal, and whether
 * the goal is met when there is one), which `npm run bench` (bench/all.ts) gathers into one
 * table.
 */
export function result(metric: string, value: number, goal: string, met?: boolean): void {
  const shown = Number.isInteger(value) ? String(value) : value.toFixed(value < 10 ? 3 : 1);
  console.log(`RESULT\t${metric}\t${shown}\t${goal}\t${met === undefined ? '' : met ? 'yes' : 'no'}`);
}

/** The median of `values` (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
