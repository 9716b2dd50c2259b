/**
 * A stand-in OIDC issuer for trying auth locally (docs/auth.md): `npx tsx
 * examples/auth/dev-issuer.ts [dir]` makes a key pair, writes its public keys to
 * `<dir>/jwks.json` (default: the current directory) and prints, one per line, a token for alice
 * (tenant acme, group travel-admins) and one for bob (tenant globex, group sales), valid for an
 * hour, for issuer `https://issuer.keel.local` and audience `keel` (the tenant in the `tenant`
 * claim: docs/tenants.md). Point temporal.yaml at it:
 *
 *   auth: { issuer: https://issuer.keel.local, audience: keel, jwks: jwks.json }
 *
 * and send a token as `Authorization: Bearer <token>`. Your real issuer (Auth0, Okta, Keycloak,
 * Entra ID, Google) gives tokens the same way; only its `jwks` is a URL.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

async function main(): Promise<void> {
  const dir = resolve(process.argv[2] ?? '.');
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  writeFileSync(join(dir, 'jwks.json'), `${JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'dev', alg: 'RS256', use: 'sig' }] }, null, 2)}\n`);
  const token = (subject: string, tenant: string, groups: string[]) =>
    new SignJWT({ groups, tenant })
      .setProtectedHeader({ alg: 'RS256', kid: 'dev' })
      .setIssuer('https://issuer.keel.local')
      .setAudience('keel')
      .setSubject(subject)
      .setIssuedAt()
      .setExpirationTime('1 hour')
      .sign(privateKey);
  console.log(`alice ${await token('alice', 'acme', ['travel-admins'])}`);
  console.log(`bob ${await token('bob', 'globex', ['sales'])}`);
  console.error(`wrote ${join(dir, 'jwks.json')}`);
}

void main();
