/**
 * Activities: all of a run's I/O. Node side; the workflow imports only the types.
 */
export { createActivities, jsonSchemaOf } from './create-activities';
export type { ActivityDependencies } from './create-activities';
export type { KeelActivities } from './types';
export { MAX_PAYLOAD_BYTES, assertPayloadFits } from './payload-limit';
