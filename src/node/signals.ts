/** Waiting for the signals that stop keel's long-running commands. Node side. */

/**
 * Resolves with the first SIGINT or SIGTERM (the handlers go once it has come); with `timeoutMs`,
 * resolves undefined when that time runs out first.
 */
export function waitForSignal(timeoutMs?: number): Promise<NodeJS.Signals | undefined> {
  return new Promise((resolve) => {
    const finish = (signal?: NodeJS.Signals) => {
      clearTimeout(timer);
      process.off('SIGINT', finish);
      process.off('SIGTERM', finish);
      resolve(signal);
    };
    const timer = timeoutMs === undefined ? undefined : setTimeout(finish, timeoutMs);
    process.on('SIGINT', finish);
    process.on('SIGTERM', finish);
  });
}
