/**
 * Activities: all of a run's I/O. Node side; the workflow imports only the types.
 */
export { createActivities } from './create-activities';
export { jsonSchemaOf } from './resolve-agent';
export type { ActivityDependencies } from './create-activities';
export type { KeelActivities } from './types';
export { MAX_PAYLOAD_BYTES, assertPayloadFits } from './payload-limit';
