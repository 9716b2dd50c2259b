/**
 * keel-agents/protocol: the contract a client in any language speaks with keel's workflows:
 * the workflow type names, the queries, updates and signals they answer, and the zod schemas of
 * what crosses (run input, result and status, messages, decisions, sessions, artifacts).
 * docs/protocol.md describes it; schemas/ holds the same shapes as JSON Schema.
 */
export {
  GENERATE_WORKFLOW,
  SESSION_WORKFLOW,
  statusQuery,
  messagesQuery,
  resumeUpdate,
  resumeSignal,
  steerUpdate,
  snapshotQuery,
  currentRunQuery,
  invokeUpdate,
  waitForSnapshotUpdate,
  abortSessionUpdate,
} from './core/protocol';
export { AgentSpecSchema, RunInputSchema, RunResultSchema, RunStatusSchema } from './core/run';
export { MessageSchema, ModelRequestSchema, ModelResponseSchema, PartSchema } from './core/messages';
export { UsageSchema } from './core/usage';
export { DecisionSchema, DecisionRecordSchema } from './core/holds';
export { InvokeOutputSchema, SnapshotSchema, SessionStateSchema, sessionWorkflowId } from './core/session';
export { ArtifactSchema } from './core/artifacts';
export { SteerInputSchema, SteerRecordSchema, STEER_METADATA_KEY } from './core/steering';
export { PRINCIPAL_MEMO_KEY, PrincipalSchema, type Principal } from './core/principal';
