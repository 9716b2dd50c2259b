import { defaultPayloadConverter } from '@temporalio/common';
import { mkdtempSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileStorageDriver } from './file-driver';

const context = { abortSignal: new AbortController().signal } as never;

describe('FileStorageDriver', () => {
  it("renews a stored payload's time when it is stored again, so keel storage gc sees it as young", async () => {
    const driver = new FileStorageDriver(mkdtempSync(join(tmpdir(), 'keel-file-driver-')));
    const payload = defaultPayloadConverter.toPayload({ document: 'x'.repeat(2000) });
    const [claim] = await driver.store(context, [payload]);
    const hash = claim!.claimData.hashValue!;
    const path = join(driver.directory, hash.slice(0, 2), hash);
    // A blob last stored two days ago, which a collection with a one-hour minimum age would take.
    const old = new Date(Date.now() - 2 * 24 * 3600 * 1000);
    utimesSync(path, old, old);
    await driver.store(context, [payload]);
    expect(Date.now() - statSync(path).mtimeMs).toBeLessThan(60_000);
    const [back] = await driver.retrieve(context, [claim!]);
    expect(defaultPayloadConverter.fromPayload(back!)).toEqual({ document: 'x'.repeat(2000) });
  });
});
