/**
 * Runs examples/auth/dev-issuer.ts as a user would (docs/auth.md, docs/tenants.md): it writes
 * `<dir>/jwks.json` and prints a token per user; the tokens, by user name.
 */
import { join } from 'node:path';
import { expect } from 'vitest';
import { spawnCommand } from './processes';

export async function devIssuerTokens(dir: string): Promise<Record<string, string>> {
  const minter = spawnCommand(process.execPath, ['--import', 'tsx', join(__dirname, '..', '..', 'examples', 'auth', 'dev-issuer.ts'), dir], {
    label: 'dev-issuer',
  });
  expect(await minter.exited, minter.stderr()).toBe(0);
  return Object.fromEntries(
    minter
      .stdout()
      .trim()
      .split('\n')
      .map((line) => line.split(' ') as [string, string]),
  );
}
