/**
 * The data converter every keel process uses (workers, clients, the CLI, the UI): the SDK's
 * default converter with payload encryption and External Storage as temporal.yaml configures
 * them, so a payload one process sealed or stored, any other reads. The SDK applies the codec
 * before External Storage offloads a payload: stored blobs are ciphertext too. Node side.
 */
import { ExternalStorage, type DataConverter, type StorageDriver } from '@temporalio/common';
import { resolve } from 'node:path';
import { ConfigError } from '../config/load';
import type { KeelConfig } from '../config/schema';
import { missingPackage, requireModule } from '../node/require-ts';
import { encryptionCodec } from '../security/encryption';
import { FileStorageDriver } from './file-driver';

type StorageConfig = Pick<KeelConfig, 'externalStorage' | 'baseDir'> & Partial<Pick<KeelConfig, 'encryption'>>;

/** The configured storage driver, or undefined for `driver: none`. */
export async function storageDriver(config: StorageConfig): Promise<StorageDriver | undefined> {
  const storage = config.externalStorage;
  if (storage.driver === 'none') return undefined;
  if (storage.driver === 'file') return new FileStorageDriver(resolve(config.baseDir, storage.directory));
  return loadS3Driver().s3StorageDriver(storage.s3!);
}

/** The S3 packages, optional peer dependencies of keel: only projects that store payloads in S3 install them. */
const S3_PACKAGES = ['@aws-sdk/client-s3', '@temporalio/external-storage-s3', '@temporalio/external-storage-s3-aws-sdk'];

/** The S3 driver module, loaded only when asked for (the AWS SDK is slow to load and optional). */
function loadS3Driver(): typeof import('./s3-driver') {
  try {
    return requireModule<typeof import('./s3-driver')>('./s3-driver', __filename);
  } catch (error) {
    const missing = missingPackage(error, S3_PACKAGES);
    if (!missing) throw error;
    throw new ConfigError(
      `externalStorage.driver: "s3" needs ${missing}, which is not installed; install the S3 packages: npm install ${S3_PACKAGES.join(' ')}`,
    );
  }
}

/**
 * The data converter of the config (undefined: the SDK's default, nothing encrypted or stored).
 * `forWorkflows`: for a worker or replayer, whose codec hands a workflow the sealed payloads of
 * its own it cannot open as markers (`EncryptionCodecOptions.unopenable`); clients keep failing.
 */
export async function keelDataConverter(config: StorageConfig, { forWorkflows = false }: { forWorkflows?: boolean } = {}): Promise<DataConverter | undefined> {
  const codec = encryptionCodec(config, { unopenable: forWorkflows ? 'mark' : 'throw' });
  const driver = await storageDriver(config);
  if (!driver && !codec) return undefined;
  return {
    ...(codec ? { payloadCodecs: [codec] } : {}),
    ...(driver ? { externalStorage: new ExternalStorage({ drivers: [driver], payloadSizeThreshold: config.externalStorage.threshold }) } : {}),
  };
}
