/** Runs the `temporal` CLI against the shared test server, as an operator (or an attacker with its rights) would. */
import { inject } from 'vitest';
import { spawnCommand } from './processes';

/** `temporal <args> --address <test server>` to completion. */
export async function temporalCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cli = spawnCommand(inject('temporalBinary'), [...args, '--address', inject('temporalAddress')], { label: `temporal ${args.join(' ')}` });
  const code = await cli.exited;
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

/** Sends signal `name` to run `workflowId` with the CLI; extra flags (`--input-meta ...`) go after the input. */
export async function signalWithCli(workflowId: string, name: string, input: string, extra: string[] = []): Promise<void> {
  const sent = await temporalCli(['workflow', 'signal', '--workflow-id', workflowId, '--name', name, '--input', input, ...extra]);
  if (sent.code !== 0) throw new Error(`temporal workflow signal ${name} to ${workflowId} failed (${sent.code}): ${sent.stderr}`);
}
