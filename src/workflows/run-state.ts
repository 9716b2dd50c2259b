/**
 * The state of one generate run, as one explicit object that the loop's steps pass along:
 * what the `status` and `messages` queries report, and the model requests in flight (read
 * back by the model activity). Runs in the workflow: deterministic, no I/O.
 */
import type { Artifact } from '../core/artifacts';
import type { Message } from '../core/messages';
import type { Usage } from '../core/usage';
import type { SteerState } from '../core/steering';
import type { ReportTarget, RunStatus } from '../core/run';

/** One run's state. JSON-plain. */
export interface RunState {
  /** The run id a user sees (the workflow id). */
  readonly runId: string;
  /** What the `status` query reports (messageCount is filled in when asked). */
  status: RunStatus;
  /** The conversation as far as the run has got (the `messages` query). */
  messages: Message[];
  /** The run's artifacts (a name is unique). */
  artifacts: Artifact[];
  /** The model requests whose activity is in flight, by request key: their JSON text and page ids. */
  modelRequests: Record<string, { text: string; ids: string[] }>;
  /** Model calls made so far, per model (a scripted reply's index). */
  modelCalls: Record<string, number>;
  /**
   * The runs this run started that may report holds to it, by the key it shows them under
   * (reporters.ts).
   */
  reporters: Record<string, string>;
  /** Later runs of the conversation that follow this run's holds (it reports them there too). */
  followers?: ReportTarget[];
  /** Every steering message the chain accepted, by update id, and where it stands (steering.ts: a steer sent again is not added again). */
  steerIds?: Record<string, SteerState>;
  /**
   * The run's turns, for a fork at one of them (forkPointQuery): `base`, the model replies in the
   * conversation it started with (a session's history, a fork's source; its own turns come after
   * them), and `usage`, what it had spent (its `status.usage`) as each of its turns began (entry i
   * for the turn after `base + i`).
   */
  turns?: { base: number; usage: Usage[] };
  /** What the run last published of itself: its pending holds in its memo, as JSON (absent: none written), and, while it keeps its search attributes (KeelAgent, KeelStatus), the state last upserted. */
  published: { holds?: string; state?: string };
  /** Each built-in feature's slot, by its name (features/feature.ts): its own state, carried across continue-as-new. */
  features: Record<string, unknown>;
}

/** A fresh state for run `runId` of agent `agent`. */
export function newRunState(runId: string, agent: string): RunState {
  return {
    runId,
    status: { state: 'running', agent, turn: 0, usage: {}, interrupts: [], messageCount: 0, artifacts: [], tasks: [] },
    messages: [],
    artifacts: [],
    modelRequests: {},
    modelCalls: {},
    reporters: {},
    published: {},
    features: {},
  };
}
