/**
 * The S3 option of External Storage: the SDK's official driver
 * (`@temporalio/external-storage-s3`) over the AWS SDK's S3 client. For workers on several
 * machines: every process reaches the same bucket. Loaded only when temporal.yaml asks for
 * it. Node side.
 */
import { S3Client } from '@aws-sdk/client-s3';
import type { StorageDriver } from '@temporalio/common';
import { S3StorageDriver } from '@temporalio/external-storage-s3';
import { AwsSdkS3StorageDriverClient } from '@temporalio/external-storage-s3-aws-sdk';
import type { KeelConfig } from '../config/schema';

type S3Config = NonNullable<KeelConfig['externalStorage']['s3']>;

/** The S3 driver for a bucket; credentials come from the AWS SDK's default chain. */
export function s3StorageDriver({ bucket, region, endpoint, forcePathStyle }: S3Config): StorageDriver {
  // S3-compatible servers (an endpoint) often lack the newer default checksums: ask for them only when required.
  const compatible = endpoint ? { endpoint, requestChecksumCalculation: 'WHEN_REQUIRED' as const, responseChecksumValidation: 'WHEN_REQUIRED' as const } : {};
  const client = new S3Client({ region, forcePathStyle, ...compatible });
  // The driver is built against the SDK's StorageDriver interface (structurally the same across 1.22–1.24), so no cast.
  return new S3StorageDriver({ client: new AwsSdkS3StorageDriverClient(client), bucket });
}
