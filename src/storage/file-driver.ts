/**
 * keel's default External Storage driver: payloads over the threshold are written to files
 * under a directory (`.keel/payloads` by default), content-addressed by the SHA-256 of the
 * serialized payload, so a payload stored twice (the same conversation chunk carried by two
 * runs of a chain) takes the space once. Needs nothing installed; every process that reads a
 * run (workers, clients, the CLI) must see the same directory, so it suits workers on one
 * machine or a shared mount. Node side.
 */
import { StorageDriverClaim, type Payload, type StorageDriver, type StorageDriverRetrieveContext, type StorageDriverStoreContext } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const PayloadProto = temporal.api.common.v1.Payload;

/** Stores payloads as files named by their content hash. */
export class FileStorageDriver implements StorageDriver {
  readonly name = 'keel.file';
  readonly type = 'keel.filedriver';

  constructor(readonly directory: string) {}

  /** The path of a stored payload, relative to the directory. */
  private static relativePath(hash: string): string {
    return join(hash.slice(0, 2), hash);
  }

  async store(_context: StorageDriverStoreContext, payloads: Payload[]): Promise<StorageDriverClaim[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        const bytes = PayloadProto.encode(payload).finish();
        const hash = createHash('sha256').update(bytes).digest('hex');
        const path = join(this.directory, FileStorageDriver.relativePath(hash));
        // Stored again: its time is renewed, so `keel storage gc` (which keeps young blobs) does not take it
        // from under the run about to refer to it. Gone meanwhile (collected): written again.
        const now = new Date();
        const renewed = await utimes(path, now, now).then(
          () => true,
          () => false,
        );
        if (!renewed) {
          await mkdir(join(this.directory, hash.slice(0, 2)), { recursive: true });
          // Written under a temporary name and renamed: a reader never sees half a payload.
          const temporary = `${path}.${randomUUID()}.tmp`;
          await writeFile(temporary, bytes);
          await rename(temporary, path);
        }
        return new StorageDriverClaim({ hashAlgorithm: 'sha256', hashValue: hash });
      }),
    );
  }

  async retrieve(_context: StorageDriverRetrieveContext, claims: StorageDriverClaim[]): Promise<Payload[]> {
    return Promise.all(
      claims.map(async (claim) => {
        const { hashAlgorithm, hashValue } = claim.claimData;
        if (hashAlgorithm !== 'sha256' || !hashValue || !/^[0-9a-f]{64}$/.test(hashValue)) {
          throw new Error(`keel file storage: malformed claim ${JSON.stringify(claim.claimData)} (expected a sha256 hash)`);
        }
        const path = join(this.directory, FileStorageDriver.relativePath(hashValue));
        let bytes: Buffer;
        try {
          bytes = await readFile(path);
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          throw new Error(
            `keel file storage: payload ${hashValue} is not in ${this.directory} (${code ?? String(error)}); every worker and client must share this directory (externalStorage.directory in temporal.yaml), or use the S3 driver`,
          );
        }
        const actual = createHash('sha256').update(bytes).digest('hex');
        if (actual !== hashValue) throw new Error(`keel file storage: payload file ${path} is corrupt (its hash is ${actual})`);
        return PayloadProto.decode(bytes);
      }),
    );
  }
}
