/**
 * The access rules (docs/tenants.md) as a verified identity meets them: each kind of entry, the
 * defaults, a run that belongs to no one, and the visibility clause a listing is scoped with
 * (quoted, so a subject or tenant holding quotes cannot close it). The checks against real runs on
 * every surface are test/tenants.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { AccessConfigSchema, type AccessConfig } from '../config/schema';
import { accessOf } from './access';
import type { Identity } from './identity';

const auth = { issuer: 'https://idp.test', audience: 'keel', jwks: 'jwks.json', groupsClaim: 'groups', tenantClaim: 'tenant' };
const as = (identity: Identity, access: Partial<AccessConfig> = {}) => accessOf({ auth, access: AccessConfigSchema.parse(access) }, identity);

const alice: Identity = { subject: 'alice', groups: [], tenant: 'A' };
const ada: Identity = { subject: 'ada', groups: ['admins'], tenant: 'A' };
const bob: Identity = { subject: 'bob', groups: ['admins', 'support'], tenant: 'B' };
const alicesRun = { tenant: 'A', owner: 'alice' };

describe('access rules', () => {
  it('by default: the owner, and admins of the run’s own tenant only', () => {
    expect(as(alice).may('read', alicesRun)).toBe(true);
    expect(as(ada).may('decide', alicesRun)).toBe(true);
    expect(as(bob).may('read', alicesRun), 'an admin of another tenant').toBe(false);
    expect(as({ ...alice, tenant: 'B' }).may('read', alicesRun), 'the same subject is the owner whatever tenant it claims now').toBe(true);
    expect(as(alice).principal).toEqual({ tenant: 'A', owner: 'alice' });
  });

  it('tenant, group:, user: and * entries, each for its own action', () => {
    const rules = { read: ['tenant'], steer: ['group:support'], abort: ['user:bob'], fork: ['*'], decide: ['owner'] };
    expect(as(ada, rules).may('read', alicesRun)).toBe(true);
    expect(as(bob, rules).may('read', alicesRun)).toBe(false);
    expect(as(bob, rules).may('steer', alicesRun)).toBe(true);
    expect(as(ada, rules).may('steer', alicesRun)).toBe(false);
    expect(as(bob, rules).may('abort', alicesRun)).toBe(true);
    expect(as(bob, rules).may('fork', alicesRun)).toBe(true);
    expect(as(ada, rules).may('decide', alicesRun)).toBe(false);
  });

  it('a run that belongs to no one matches only entries that name no run: group:, user: and *', () => {
    expect(as(alice).may('read', {})).toBe(false);
    expect(as(ada).may('read', {}), 'no tenant is not every tenant').toBe(false);
    expect(as(bob, { read: ['group:support'] }).may('read', {})).toBe(true);
  });

  it('scopes a listing with a quoted clause, none when a rule reads every run, and lists nothing when no rule can match', () => {
    expect(as({ subject: "o'brien", groups: ['admins'], tenant: "x' OR 'y" }).readScope()?.clause).toBe(
      "KeelOwner = 'o\\'brien' OR KeelTenant = 'x\\' OR \\'y'",
    );
    expect(as(bob, { read: ['owner', 'group:support'] }).readScope()?.clause).toBeUndefined();
    expect(as(bob, { read: ['user:carol'] }).readScope()?.clause).toBe(false);
    expect(as(alice).readScope()?.admits({ keelPrincipal: alicesRun })).toBe(true);
    expect(as(bob).readScope()?.admits({ keelPrincipal: alicesRun })).toBe(false);
  });

  it('without auth, the one local user may do everything', () => {
    const open = accessOf({ access: AccessConfigSchema.parse({}) }, undefined);
    expect(open.may('abort', alicesRun)).toBe(true);
    expect(open.readScope()).toBeUndefined();
    expect(open.principal).toEqual({});
  });
});
