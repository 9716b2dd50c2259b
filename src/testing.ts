/**
 * keel-agents/testing: what a project's own tests need besides the public API: an embedded
 * Temporal dev server on a port of their choosing (the `temporal` binary keel finds or builds),
 * and a wait until a server answers. Scripted models are a provider in `keel-agents`.
 */
export { findTemporalBinary, startDevServer, waitForServer } from './server/dev-server';
export type { DevServer, DevServerOptions } from './server/dev-server';
