/**
 * The data converter every keel process uses (workers, clients, the CLI): the SDK's default
 * converter with External Storage as temporal.yaml configures it, so a payload one process
 * stored, any other reads. Node side.
 */
import { ExternalStorage, type DataConverter, type StorageDriver } from '@temporalio/common';
import { resolve } from 'node:path';
import type { KeelConfig } from '../config/schema';
import { requireModule } from '../worker/require-ts';
import { FileStorageDriver } from './file-driver';

type StorageConfig = Pick<KeelConfig, 'externalStorage' | 'baseDir'>;

/** The configured storage driver, or undefined for `driver: none`. */
export async function storageDriver(config: StorageConfig): Promise<StorageDriver | undefined> {
  const storage = config.externalStorage;
  if (storage.driver === 'none') return undefined;
  if (storage.driver === 'file') return new FileStorageDriver(resolve(config.baseDir, storage.directory));
  // Loaded only when asked for: the AWS SDK is slow to load.
  const { s3StorageDriver } = requireModule<typeof import('./s3-driver')>('./s3-driver', __filename);
  return s3StorageDriver(storage.s3!);
}

/** The data converter of the config (undefined: the SDK's default, nothing stored). */
export async function keelDataConverter(config: StorageConfig): Promise<DataConverter | undefined> {
  const driver = await storageDriver(config);
  if (!driver) return undefined;
  return { externalStorage: new ExternalStorage({ drivers: [driver], payloadSizeThreshold: config.externalStorage.threshold }) };
}
