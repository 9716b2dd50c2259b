/**
 * The public API report: every entry point's declarations (`tsc -p tsconfig.build.json`, into
 * .keel/api/dts) summarized by api-extractor into api/<entry>.api.md, checked in. `npm run api`
 * rewrites the reports after a change meant to change the public surface; the test
 * (test/api-report.test.ts) fails while a report differs, so the change shows in review.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CompilerState, Extractor, ExtractorConfig, ExtractorLogLevel, type IConfigFile } from '@microsoft/api-extractor';

const ROOT = resolve(__dirname, '..');
const WORK = join(ROOT, '.keel', 'api');
const DTS = join(WORK, 'dts');

/** Each package entry point (package.json `exports`): its report name and its declarations, relative to dist/. */
export const API_ENTRIES = [
  { name: 'keel-agents', dts: 'index.d.ts' },
  { name: 'keel-agents-middleware', dts: 'features/index.d.ts' },
  { name: 'keel-agents-workflow', dts: 'workflows/index.d.ts' },
  { name: 'keel-agents-protocol', dts: 'protocol.d.ts' },
  { name: 'keel-agents-testing', dts: 'testing.d.ts' },
];

/** What one entry's report run found. */
export interface ReportOutcome {
  name: string;
  /** True when the checked-in report matches (or, with `update`, was rewritten). */
  matches: boolean;
  errors: number;
}

/** Builds the declarations and compares (or, with `update`, rewrites) every report. */
export function apiReports({ update }: { update: boolean }): ReportOutcome[] {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--emitDeclarationOnly', '--outDir', DTS], {
    stdio: 'inherit',
  });
  const configs = API_ENTRIES.map(({ name, dts }) => {
    const configObject: IConfigFile = {
      projectFolder: ROOT,
      mainEntryPointFilePath: join(DTS, dts),
      compiler: {
        overrideTsconfig: {
          compilerOptions: { strict: true, skipLibCheck: true, moduleResolution: 'node', esModuleInterop: true, types: ['node'] },
          files: [join(DTS, dts)],
        },
      },
      apiReport: { enabled: true, reportFileName: `${name}.api.md`, reportFolder: join(ROOT, 'api'), reportTempFolder: join(WORK, 'temp') },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: {
        extractorMessageReporting: {
          default: { logLevel: ExtractorLogLevel.Warning },
          'ae-missing-release-tag': { logLevel: ExtractorLogLevel.None },
          'ae-forgotten-export': { logLevel: ExtractorLogLevel.None, addToApiReportFile: true },
        },
        tsdocMessageReporting: { default: { logLevel: ExtractorLogLevel.None } },
        compilerMessageReporting: { default: { logLevel: ExtractorLogLevel.Warning } },
      },
    };
    return {
      name,
      config: ExtractorConfig.prepare({ configObject, configObjectFullPath: join(WORK, `${name}.json`), packageJsonFullPath: join(ROOT, 'package.json') }),
    };
  });
  // One TypeScript program over every entry's declarations, shared by the five reports (each
  // would otherwise build its own).
  const compilerState = CompilerState.create(configs[0]!.config, { additionalEntryPoints: configs.map(({ config }) => config.mainEntryPointFilePath) });
  return configs.map(({ name, config }) => {
    const result = Extractor.invoke(config, {
      compilerState,
      localBuild: update,
      showVerboseMessages: false,
      messageCallback: (message) => {
        if (message.logLevel === ExtractorLogLevel.Warning) message.logLevel = ExtractorLogLevel.Verbose;
      },
    });
    return { name, matches: result.succeeded && (update || !result.apiReportChanged), errors: result.errorCount };
  });
}

if (require.main === module) {
  const outcomes = apiReports({ update: process.argv.includes('--update') });
  for (const outcome of outcomes) process.stdout.write(`${outcome.name}: ${outcome.matches ? 'up to date' : 'differs'}\n`);
  process.exitCode = outcomes.every((outcome) => outcome.matches) ? 0 : 1;
}
