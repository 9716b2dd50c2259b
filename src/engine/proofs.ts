/**
 * The run's side of proofs (src/core/proofs.ts): a run that ends with held calls signs each
 * held part; a run resumed from a conversation trusts a hold's marks only when its proof
 * verifies, and treats an unproven hold as a call that was never held (every gate checks it
 * afresh, so a made-up history approves nothing). Task ids are signed and checked the same way.
 * Runs in the workflow: the signing is an activity (the key stays on the workers).
 */
import { log, type ActivityOptions } from '@temporalio/workflow';
import { INTERRUPT_METADATA } from '../core/interrupts';
import { toolRequestParts, type Message, type Part, type ToolRequestPart } from '../core/messages';
import { PROOF_METADATA, holdSubject, isHeldPart, type ProofSubject } from '../core/proofs';
import { proxyDoor, signProofsDoor, verifyProofsDoor } from './activities';
import { asKeelError } from './activity-errors';

/** Signing and checking: a few tries (a worker restarting); a refusal is final. */
const PROOF_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '10 seconds',
    maximumAttempts: 10,
    nonRetryableErrorTypes: ['PERMISSION_DENIED', 'INVALID_ARGUMENT', 'FAILED_PRECONDITION'],
  },
};
const signProofs = proxyDoor(signProofsDoor, PROOF_OPTIONS);
const verifyProofs = proxyDoor(verifyProofsDoor, PROOF_OPTIONS);

/** Proofs of `subjects`, in order. */
export async function sign(subjects: ProofSubject[]): Promise<string[]> {
  if (subjects.length === 0) return [];
  try {
    return await signProofs({ subjects });
  } catch (error) {
    throw asKeelError(error, 'signing proofs');
  }
}

/** Whether each claim's proof verifies, in order. */
export async function verify(claims: Array<{ subject: ProofSubject; proof: string }>): Promise<boolean[]> {
  if (claims.length === 0) return [];
  try {
    return await verifyProofs({ claims });
  } catch (error) {
    throw asKeelError(error, 'checking proofs');
  }
}

/** `message` with each held tool request part carrying the proof that a run of `agent` raised it. */
export async function signHolds(agent: string, message: Message): Promise<Message> {
  const held = toolRequestParts(message).filter(isHeldPart);
  const proofs = await sign(held.map((part) => holdSubject(agent, part)));
  const byPart = new Map<Part, string>(held.map((part, index) => [part, proofs[index]!]));
  return {
    ...message,
    content: message.content.map((part) => (byPart.has(part) ? { ...part, metadata: { ...part.metadata, [PROOF_METADATA.hold]: byPart.get(part) } } : part)),
  };
}

/** A held part without its hold's marks: a call that was never held. */
function unheld(part: ToolRequestPart): ToolRequestPart {
  const {
    [INTERRUPT_METADATA.interrupt]: _hold,
    [INTERRUPT_METADATA.interruptedBy]: _by,
    [INTERRUPT_METADATA.interruptStage]: _stage,
    [PROOF_METADATA.hold]: _proof,
    ...rest
  } = part.metadata ?? {};
  const { metadata: _metadata, ...bare } = part;
  return Object.keys(rest).length ? { ...bare, metadata: rest } : bare;
}

/**
 * The conversation a resume may trust: its last message's held parts keep their marks only
 * when their proof verifies for `agent`; the others lose them (logged), so the resume runs them
 * as fresh calls through every gate.
 */
export async function trustedForResume(agent: string, messages: Message[]): Promise<Message[]> {
  const last = messages[messages.length - 1];
  if (!last || last.role !== 'model') return messages;
  const held = toolRequestParts(last).filter(isHeldPart);
  if (held.length === 0) return messages;
  const claims = held.map((part) => ({ subject: holdSubject(agent, part), proof: part.metadata?.[PROOF_METADATA.hold] }));
  const signed = claims.filter((claim): claim is { subject: ProofSubject; proof: string } => typeof claim.proof === 'string');
  const answers = await verify(signed);
  const verified = new Set(signed.filter((_claim, index) => answers[index]).map((claim) => claim.proof));
  const content = last.content.map((part) => {
    if (!('toolRequest' in part) || !isHeldPart(part)) return part;
    const proof = part.metadata?.[PROOF_METADATA.hold];
    if (typeof proof === 'string' && verified.has(proof)) return part;
    log.warn('resume: a held call carries no valid proof that a run raised its hold; it runs as a new call through every gate', {
      toolName: part.toolRequest.name,
      ref: part.toolRequest.ref,
      reason: typeof proof === 'string' ? 'the proof does not verify (made up, changed, or signed with another key)' : 'it has no proof',
    });
    return unheld(part);
  });
  return [...messages.slice(0, -1), { ...last, content }];
}
