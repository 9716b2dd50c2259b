/**
 * The commands about keel itself and a project: `keel --version`, `keel init`, `keel setup`. Node side.
 */
import type { KeelConfig } from '../config/schema';
import { keelVersion } from '../node/package-root';
import { EXIT, UsageError, later, print, type CliOptions } from './common';

/** `keel --version`. */
export function printVersion(options: CliOptions): number {
  const version = keelVersion();
  print(options.json, { version }, `keel ${version}`);
  return EXIT.ok;
}

export function commandInit(positionals: string[]): number {
  const [target, ...rest] = positionals;
  if (rest.length) throw new UsageError(`keel init takes one directory at most: keel init [dir]; got ${positionals.join(' ')}`);
  const { initProject, InitRefusal } = later<typeof import('../dev/init')>('../dev/init');
  try {
    const { dir, written, packageJson } = initProject(target);
    const { created, scripts, dependencies } = packageJson;
    const gained = [...(scripts.length ? [`the ${scripts.join(' and ')} script${scripts.length > 1 ? 's' : ''}`] : []), ...dependencies];
    const lines = [
      `keel init: wrote ${[...written, ...(created ? ['package.json'] : [])].join(', ')} in ${dir}${gained.length ? `; package.json gained ${gained.join(', ')}` : ''}`,
      '',
      ...(target ? [`  cd ${target}`] : []),
      // What package.json now lists and node_modules may lack (typescript, for npm run typecheck); npm test runs without it.
      ...(created || dependencies.length ? ['  npm install                                # what package.json lists (typescript, for npm run typecheck)'] : []),
      "  npm test                                   # the project's own tests, offline (a scripted model)",
      '  npx keel dev                               # a dev server and a worker; then, in another terminal:',
      '  npx keel run support "where is order 7?"',
      '  npx keel run support "refund order 7"      # waits for: npx keel approve <runId> i1',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    return EXIT.ok;
  } catch (error) {
    if (error instanceof InitRefusal) throw new UsageError(error.message.replace(/^keel init: /, 'init: '));
    throw error;
  }
}

/** `keel setup`: the temporal binary keel uses, installed into the project's .keel/bin first when there is none. */
export function commandSetup(config: KeelConfig, positionals: string[], options: CliOptions): number {
  if (positionals.length) throw new UsageError(`keel setup takes no arguments; got ${positionals.join(' ')}`);
  const binary = later<typeof import('../server/dev-server')>('../server/dev-server').findTemporalBinary(config);
  print(options.json, { binary }, `keel setup: temporal at ${binary}`);
  return EXIT.ok;
}
