/** Finds free loopback TCP ports for servers the tests start: keel's own (src/server/ports.ts). */
export { freePort } from '../../src/server/ports';
