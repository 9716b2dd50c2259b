/**
 * `replayHistories`: a project's recorded runs (`keel history export`) replayed against its
 * current workflow code (keel's workflow plus the project's middleware modules, bundled as
 * `keel worker` bundles them), so that a change that would break runs under way fails in the
 * project's CI rather than in production. Node side; no server needed.
 */
import { Worker } from '@temporalio/worker';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { loadConfig } from '../config/load';
import { historyFromJSON } from '../node/history-json';
import type { KeelConfig } from '../config/schema';
import { keelDataConverter } from '../storage/data-converter';
import { workflowBundlePath } from '../worker/bundle';

/**
 * A recorded history: a file, or a file and the run id it was recorded from; or a directory,
 * which stands for the `.json` files in it (as `keel history export --out <dir>` names them).
 */
export type HistoryFile = string | { file: string; workflowId: string };

/** Options of `replayHistories`. */
export interface ReplayHistoriesOptions {
  /**
   * The project's middleware modules, bundled with the workflow (paths from `baseDir`).
   * Default: the `middlewareModules` of `./temporal.yaml` (of `baseDir`), none without one.
   */
  middlewareModules?: string[];
  /** A temporal.yaml whose `middlewareModules` to bundle, instead of `./temporal.yaml`. */
  config?: string;
  /** Where relative paths resolve from (default: the working directory). */
  baseDir?: string;
  /** A prebuilt workflow bundle to replay against, instead of building one. */
  bundlePath?: string;
}

/** One history that did not replay. */
export interface ReplayFailure {
  file: string;
  workflowId: string;
  message: string;
}

/** Thrown by `replayHistories`: names each file that did not replay and why (nondeterminism, usually). */
export class HistoryReplayError extends Error {
  constructor(readonly failures: ReplayFailure[]) {
    super(
      `${failures.length} recorded ${failures.length === 1 ? 'history does' : 'histories do'} not replay against the current workflow code:\n${failures
        .map((failure) => `  ${failure.file} (run ${failure.workflowId}): ${failure.message}`)
        .join('\n')}`,
    );
    this.name = 'HistoryReplayError';
  }
}

/**
 * The run id of a history file named the way `keel history export` names one:
 * `<runId>.json`, with the run id URI-encoded (a child run's `/` as `%2F`).
 */
export function runIdOfHistoryFile(file: string): string {
  return decodeURIComponent(basename(file).replace(/\.json$/, ''));
}

/** The project's temporal.yaml (the one named, else ./temporal.yaml when there is one). */
function projectConfig({ config, baseDir = process.cwd() }: ReplayHistoriesOptions): KeelConfig | undefined {
  const path = resolve(baseDir, config ?? 'temporal.yaml');
  if (!config && !existsSync(path)) return undefined;
  return loadConfig({ path, explicit: true });
}

function middlewareModulesOf(options: ReplayHistoriesOptions, loaded: KeelConfig | undefined): string[] {
  if (options.middlewareModules) return options.middlewareModules.map((module) => resolve(options.baseDir ?? process.cwd(), module));
  return (loaded?.middlewareModules ?? []).map((module) => resolve(loaded!.baseDir, module));
}

/** The files `files` names, a directory given as the `.json` files in it (sorted); throws when that leaves none. */
function historyFiles(files: HistoryFile[], baseDir: string): Array<{ file: string; workflowId?: string }> {
  const listed = files.flatMap((entry) => {
    if (typeof entry !== 'string') return [{ file: resolve(baseDir, entry.file), workflowId: entry.workflowId }];
    const path = resolve(baseDir, entry);
    if (!statSync(path, { throwIfNoEntry: false })?.isDirectory()) return [{ file: path }];
    return readdirSync(path)
      .filter((name) => name.endsWith('.json'))
      .sort()
      .map((name) => ({ file: join(path, name) }));
  });
  // A replay of nothing proves nothing: a CI step reading an empty or mistyped directory must not pass.
  if (listed.length === 0) {
    const named = files.map((entry) => resolve(baseDir, typeof entry === 'string' ? entry : entry.file)).join(', ');
    throw new Error(
      `replayHistories: no recorded histories to replay${named ? ` (no .json files in ${named})` : ' (an empty list)'}; record one with npx keel history export <runId> --out <dir>`,
    );
  }
  return listed;
}

/**
 * Replays recorded histories against the current workflow code; resolves when every one
 * replays, throws a `HistoryReplayError` naming each file that does not (and why), and an
 * error when there is none to replay (an empty list, or directories with no `.json` file).
 */
export async function replayHistories(files: HistoryFile[], options: ReplayHistoriesOptions = {}): Promise<void> {
  const baseDir = options.baseDir ?? process.cwd();
  const entries = historyFiles(files, baseDir).map((entry) => {
    const { file } = entry;
    const workflowId = entry.workflowId ?? runIdOfHistoryFile(file);
    let history;
    try {
      history = historyFromJSON(JSON.parse(readFileSync(file, 'utf8')));
    } catch (error) {
      throw new Error(`${file}: not a recorded history (keel history export writes one): ${(error as Error).message}`);
    }
    return { file, workflowId, history };
  });
  const loaded = projectConfig({ ...options, baseDir });
  const codePath =
    options.bundlePath ??
    (await workflowBundlePath({ middlewareModules: middlewareModulesOf({ ...options, baseDir }, loaded), cacheDir: resolve(baseDir, '.keel', 'cache') }));
  // The project's encryption keys (and payload store) open what its runs recorded.
  const dataConverter = loaded ? await keelDataConverter(loaded, { forWorkflows: true }) : undefined;
  const failures: ReplayFailure[] = [];
  // Replayed one by one: the SDK's results carry a workflow id, and two files may hold runs of one id.
  for (const { file, workflowId, history } of entries) {
    try {
      await Worker.runReplayHistory({ workflowBundle: { codePath }, ...(dataConverter ? { dataConverter } : {}) }, history, workflowId);
    } catch (error) {
      failures.push({ file, workflowId, message: (error as Error).message });
    }
  }
  if (failures.length) throw new HistoryReplayError(failures);
}
