/**
 * Signs a held part as a worker of this checkout would (the workers the tests start use the
 * checkout's `.keel/signing-key`): for tests that need a hold a run could have raised under
 * another configuration, which no live run of the test raises.
 */
import { defineConfig } from '../../src/config/load';
import type { ToolRequestPart } from '../../src/core/messages';
import { PROOF_METADATA, holdSubject } from '../../src/core/proofs';
import { loadSigningKeys } from '../../src/security/signing-keys';

/** `part` with the proof that a run of `agent` raised its hold. */
export function signedHold(agent: string, part: ToolRequestPart): ToolRequestPart {
  const proof = loadSigningKeys(defineConfig({}), {}).sign(holdSubject(agent, part));
  return { ...part, metadata: { ...part.metadata, [PROOF_METADATA.hold]: proof } };
}
