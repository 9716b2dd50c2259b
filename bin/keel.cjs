#!/usr/bin/env node
// The `keel` command. In the installed package it runs the built CLI (dist/); in a keel
// checkout, where src/ is present, it runs the TypeScript sources through tsx. Either way the
// .ts modules a temporal.yaml lists load through tsx when a command needs them.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const source = join(__dirname, '..', 'src', 'cli', 'main.ts');
let cli;
if (existsSync(source)) {
  require('tsx/cjs/api').register();
  cli = require(source);
} else {
  cli = require('../dist/cli/main.js');
}
cli
  .main(process.argv.slice(2))
  .then((code) => {
    process.exitCode = code;
    // Exit once the output is written: a Temporal client's retry timer still pending after its
    // connection closed (e.g. a call retried through a server restart) must not outlive the
    // command, nor throw "Channel has been shut down" after it finished.
    process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
  })
  .catch((error) => {
    console.error(`keel: ${error && error.stack ? error.stack : error}`);
    process.exitCode = 1;
  });
