/**
 * The state of one generate run, as one explicit object that the loop's steps pass along:
 * what the `status` and `messages` queries report, and the model requests in flight (read
 * back by the model activity). Runs in the workflow: deterministic, no I/O.
 */
import type { Artifact } from '../core/artifacts';
import type { Message } from '../core/messages';
import type { Usage } from '../core/usage';
import type { SteerState } from '../core/steering';
import type { TaskRecord } from '../core/tasks';
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
  /** Sub-agent runs started so far (numbers their run ids). */
  children: number;
  /** Background tasks this run started. */
  tasks: TaskRecord[];
  /** Run ids of tasks this run asked to stop that had not settled then. */
  aborting: string[];
  /** Run ids of finished tasks whose usage this run has counted. */
  countedTasks: string[];
  /**
   * The runs this run started that may report holds to it, by the key it shows them under
   * (reporters.ts).
   */
  reporters: Record<string, string>;
  /**
   * Task ids claimed by the conversation (not started by this chain) whose proof was checked,
   * by `<taskId> <proof>`, and whether it verified.
   */
  vouchedTasks?: Record<string, boolean>;
  /** Later runs of the conversation that follow this run's holds (it reports them there too). */
  followers?: ReportTarget[];
  /** Usage this run could not tell the budget ledgers it counts against (they had ended), by ledger run id. */
  ledgerUntold?: Record<string, Usage>;
  /** How many model calls of runs below this one were told to its ledger. */
  ledgerReports?: number;
  /** The pending holds last written to the run's memo, as JSON (absent: none written). */
  memoHolds?: string;
  /** Every steering message the chain accepted, by update id, and where it stands (steering.ts: a steer sent again is not added again). */
  steerIds?: Record<string, SteerState>;
  /** Model replies in the conversation the run started with (a session's history, a fork's source): its own turns come after them. */
  turnBase?: number;
  /**
   * What the run had spent (its `status.usage`) as each of its turns began: entry i for the
   * turn after `turnBase + i` (what a fork at that turn carries; forkPointQuery).
   */
  turnUsage?: Usage[];
  /** Set while the run keeps its search attributes (KeelAgent, KeelStatus): the state last upserted. */
  indexed?: { state: string };
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
    children: 0,
    tasks: [],
    aborting: [],
    countedTasks: [],
    reporters: {},
  };
}
