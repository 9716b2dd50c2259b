#!/usr/bin/env node
// The `keel` command. Registers tsx so the TypeScript sources (and the .ts modules a
// temporal.yaml lists) load directly, then hands over to the CLI.
require('tsx/cjs/api').register();
require('../src/client/cli.ts')
  .main(process.argv.slice(2))
  .then((code) => {
    process.exitCode = code;
  })
  .catch((error) => {
    console.error(`keel: ${error && error.stack ? error.stack : error}`);
    process.exitCode = 1;
  });
