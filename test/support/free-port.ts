/** Finds free loopback TCP ports for servers the tests start: keel's own (src/node/ports.ts). */
export { freePort } from '../../src/node/ports';
