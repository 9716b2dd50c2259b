/** Waiting for the signals that stop keel's long-running commands. Node side. */

/** Resolves with the first SIGINT or SIGTERM (the handlers go once it has come). */
export function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const handler = (signal: NodeJS.Signals) => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
      resolve(signal);
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
}
