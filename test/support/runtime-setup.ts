/**
 * Runs before each test file (vitest `setupFiles`). Test files share their process (vitest
 * `isolate: false`), and the Temporal SDK takes one runtime per process: the harness's quiet
 * one is installed first, so whichever file runs first, `capturedLogs` gets the workers' logs.
 */
import { quietRuntime } from './harness';

quietRuntime();
