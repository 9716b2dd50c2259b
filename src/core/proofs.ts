/**
 * Proofs: what a worker signs so that a client cannot make them up. A run that ends with held
 * calls (interruptMode 'return') signs each held part, and a run that starts a background task
 * signs the task id it hands the model; the signatures travel in message metadata and come back
 * with the conversation. A later run trusts a hold's marks (which stage raised it, so the stages
 * outside it let the call through) or a task id found in the conversation only when its proof
 * verifies with a key only workers hold. The signing itself is an activity (the key never enters
 * workflow history); this module says what is signed. Pure: safe in workflow code.
 */
import { z } from 'zod';
import type { ToolRequestPart } from './messages';
import { INTERRUPT_METADATA } from './interrupts';

/** Metadata keys carrying proofs. */
export const PROOF_METADATA = {
  /** On a held tool request part: the proof that a run of this agent raised this hold. */
  hold: 'interruptProof',
  /** On a delegation's tool response part: the proof that a run started this task. */
  task: 'taskProof',
} as const;

/** What a hold's proof covers: the agent, the held call and the hold's marks. */
export const HoldSubjectSchema = z.object({
  kind: z.literal('hold'),
  agent: z.string(),
  name: z.string(),
  ref: z.string().optional(),
  input: z.unknown(),
  interrupt: z.unknown(),
  interruptedBy: z.unknown(),
  interruptStage: z.unknown(),
});
/** What a task's proof covers: its id. */
export const TaskSubjectSchema = z.object({ kind: z.literal('task'), taskId: z.string() });
/** What a decider's proof covers (signed by a keel server that verified who decides): the run, the hold, who, their groups, and what they decided. */
export const DeciderSubjectSchema = z.object({
  kind: z.literal('decider'),
  runId: z.string(),
  interruptId: z.string(),
  decidedBy: z.string(),
  groups: z.array(z.string()),
  decision: z.string(),
});
export type DeciderSubject = z.infer<typeof DeciderSubjectSchema>;
export const ProofSubjectSchema = z.discriminatedUnion('kind', [HoldSubjectSchema, TaskSubjectSchema, DeciderSubjectSchema]);
export type ProofSubject = z.infer<typeof ProofSubjectSchema>;

/** Input of the `signProofs` activity. */
export const SignProofsInputSchema = z.object({ subjects: z.array(ProofSubjectSchema) });
export type SignProofsInput = z.infer<typeof SignProofsInputSchema>;

/** Input of the `verifyProofs` activity: each subject with the proof that came with it. */
export const VerifyProofsInputSchema = z.object({ claims: z.array(z.object({ subject: ProofSubjectSchema, proof: z.string() })) });
export type VerifyProofsInput = z.infer<typeof VerifyProofsInputSchema>;

/** The subject of a held tool request part of agent `agent`'s run. */
export function holdSubject(agent: string, part: ToolRequestPart): ProofSubject {
  const metadata = part.metadata ?? {};
  return {
    kind: 'hold',
    agent,
    name: part.toolRequest.name,
    ...(part.toolRequest.ref !== undefined ? { ref: part.toolRequest.ref } : {}),
    input: part.toolRequest.input ?? null,
    interrupt: metadata[INTERRUPT_METADATA.interrupt] ?? null,
    interruptedBy: metadata[INTERRUPT_METADATA.interruptedBy] ?? null,
    interruptStage: metadata[INTERRUPT_METADATA.interruptStage] ?? null,
  };
}

/** True for a tool request part that carries a hold's marks. */
export function isHeldPart(part: ToolRequestPart): boolean {
  return part.metadata?.[INTERRUPT_METADATA.interrupt] !== undefined;
}
