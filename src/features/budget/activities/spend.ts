/**
 * The `chargeSpend` activity: sends a run's charges to the spend ledger of its tenant or owner
 * (the ledger's `charge` update, with update-with-start: the first send starts the ledger) and
 * answers what its windows spent; a run's last send goes by signal-with-start, unanswered. A local activity of the run that made the calls; sent again
 * (a retry after the ledger counted them, a worker that died before the run recorded the
 * answer) they count once. What a tenant's send counted is added to the tenant spend metrics,
 * under the tenant's name when `metrics.tenants` lists it, else `other`. Node side.
 */
import { Context } from '@temporalio/activity';
import { ServiceError, WithStartWorkflowOperation, isGrpcServiceError, type Client } from '@temporalio/client';
import type { MetricMeter } from '@temporalio/common';
import { KeelError } from '../../../core/errors';
import { addUsage, checkedUsage, type Usage } from '../../../core/usage';
import { runErrorOf } from '../../../node/run-errors';
import { retryingUpdate } from '../../../node/update-retry';
import { InfrastructureError } from '../../../activities/infrastructure-error';
import { implementActivity } from '../../../activities/feature-activity';
import { tokenKinds } from '../../../activities/metrics';
import { SPEND_LEDGER_WORKFLOW, chargeSpendDoor, chargeSpendSignal, chargeSpendUpdate, spendLedgerId, type SpendAnswer, type SpendCharge } from '../spend-door';
import type { SpendLedgerInput } from '../spend-ledger';

/** The metric label of `tenant`: its name when the config lists it, else `other`. */
export const tenantLabel = (tenant: string, listed: readonly string[]): string => (listed.includes(tenant) ? tenant : 'other');

/** A counted charge of a tenant, in the metrics: tokens by kind, and cost. */
function recordSpend(meter: MetricMeter, tenant: string, usage: Usage): void {
  const tokens = meter.createCounter('keel_tenant_tokens', 'tokens', 'Tokens spent by the runs of a tenant (Budget scope tenant), by tenant and kind.');
  for (const [kind, count] of tokenKinds(usage)) tokens.add(count, { tenant, kind });
  if (usage.cost)
    meter
      .createCounter('keel_tenant_cost_micro_usd', 'micro_usd', 'Cost spent by the runs of a tenant, in millionths of a US dollar.')
      .add(Math.round(usage.cost * 1e6), { tenant });
}

/** Sends `charge` to its ledger: a run's last send by signal-with-start (answered null), every other by update-with-start. */
export async function chargeSpend(client: Client, charge: SpendCharge, { tenants = [] }: { tenants?: readonly string[] } = {}): Promise<SpendAnswer | null> {
  const { scope, name } = charge;
  const ledger = {
    workflowId: spendLedgerId(scope, name),
    taskQueue: Context.current().info.taskQueue,
    args: [{ scope, name }] as [SpendLedgerInput],
    // Every run of the tenant waits on it before its next call: bookkeeping goes first.
    priority: { priorityKey: 1 },
  };
  let answer: SpendAnswer | null;
  try {
    answer = charge.last
      ? // Acknowledged once the server holds it; the ledger counts it (once, by run and number) in its next task.
        (await client.workflow.signalWithStart(SPEND_LEDGER_WORKFLOW, { ...ledger, signal: chargeSpendSignal, signalArgs: [charge] }), null)
      : await retryingUpdate(
          () =>
            client.workflow.executeUpdateWithStart(chargeSpendUpdate, {
              args: [charge],
              startWorkflowOperation: new WithStartWorkflowOperation(SPEND_LEDGER_WORKFLOW, { ...ledger, workflowIdConflictPolicy: 'USE_EXISTING' }),
            }),
          { what: `the charge to the spend ledger of ${scope} ${name}` },
        );
  } catch (error) {
    const unavailable = KeelError.isInstance(error) && error.status === 'UNAVAILABLE';
    if (error instanceof ServiceError || isGrpcServiceError(error) || unavailable)
      throw new InfrastructureError(`could not reach the spend ledger of ${scope} ${name}: ${(error as Error).message}`);
    throw runErrorOf(error);
  }
  // What this send counted (none of a call sent again): the metrics count each call once too. A
  // last send is not answered: what it sent is counted (twice only if this worker dies between
  // sending it and the run recording that it did, and the next worker sends it again).
  const counted = answer ? answer.counted : charge.charges.reduce<Usage>((sum, { usage }) => addUsage(sum, checkedUsage(usage, { from: 'a charge' })), {});
  if (scope === 'tenant') recordSpend(Context.current().metricMeter, tenantLabel(name, tenants), counted);
  return answer;
}

/** The Node half of Budget's spend ledgers: the `chargeSpend` activity. */
export const spendActivities = [
  implementActivity(chargeSpendDoor, (charge, { client, config }) => chargeSpend(client, charge, { tenants: config?.metrics?.tenants ?? [] })),
];
