/**
 * The record of who started a dev server, read back as a later keel reads it: it counts only
 * while its process lives (and is the same process, not one that reused the pid), and names the
 * server's own process when that outlived keel.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeServerOwner, processStartTicks, recordServerOwner, sameAddress, serverOwnersPath, type ServerOwner } from './server-owner';

function projectWith(servers: ServerOwner[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'keel-owner-'));
  mkdirSync(join(dir, '.keel'));
  writeFileSync(serverOwnersPath(dir), JSON.stringify({ servers }));
  return dir;
}

const exitedPid = (): number => spawnSync('true').pid;
const startedAt = new Date().toISOString();

describe('whose dev server', () => {
  it('names the live keel process that recorded the address, and forgets it when told', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-owner-'));
    const forget = recordServerOwner({ projectDir: dir, address: '127.0.0.1:7301', command: 'keel dev' });
    expect(describeServerOwner(dir, 'localhost:7301')).toEqual({ started: true, phrase: `started by keel dev (pid ${process.pid}) in ${dir}` });
    expect(describeServerOwner(dir, '127.0.0.1:7302').started).toBe(false);
    forget();
    expect(JSON.parse(readFileSync(serverOwnersPath(dir), 'utf8'))).toEqual({ servers: [] });
    expect(describeServerOwner(dir, '127.0.0.1:7301')).toEqual({ started: false, phrase: 'not started by keel from this project' });
  });

  it('does not count a record whose process has exited, or whose pid now belongs to another process', () => {
    const address = '127.0.0.1:7303';
    expect(describeServerOwner(projectWith([{ address, keel: { pid: exitedPid() }, command: 'keel dev', projectDir: '/p', startedAt }]), address).started).toBe(
      false,
    );
    const reused = { pid: process.pid, startTicks: '1' };
    expect(processStartTicks(process.pid)).not.toBe('1');
    expect(describeServerOwner(projectWith([{ address, keel: reused, command: 'keel dev', projectDir: '/p', startedAt }]), address).started).toBe(false);
  });

  it('says so when keel has exited but the server it started still runs', () => {
    const address = '127.0.0.1:7304';
    const gone = exitedPid();
    const dir = projectWith([{ address, keel: { pid: gone }, command: 'keel server', projectDir: '/p', server: { pid: process.pid }, startedAt }]);
    expect(describeServerOwner(dir, address).phrase).toBe(
      `started by keel server (pid ${gone}, which has exited; the server, pid ${process.pid}, outlived it) in /p`,
    );
  });

  it('takes loopback names for one host, and nothing else', () => {
    expect(sameAddress('127.0.0.1:7233', 'localhost:7233')).toBe(true);
    expect(sameAddress('127.0.0.1:7233', '127.0.0.1:7234')).toBe(false);
    expect(sameAddress('10.0.0.1:7233', '127.0.0.1:7233')).toBe(false);
  });
});
