import { describe, expect, it } from 'vitest';
import * as resources1 from '@opentelemetry/resources';
import { ConfigError } from '../config/load';
import { TRACING_INSTALL, missingTracingPackage, resourceFromEnv, withSpanFieldsOfBothVersions } from './tracing';

function notFound(specifier: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`Cannot find module '${specifier}'\nRequire stack:\n- /x/dist/telemetry/tracing.js`), { code: 'MODULE_NOT_FOUND' });
}

describe('tracing packages', () => {
  it('a missing tracing package is a config error naming it and the install line, not a connection failure', () => {
    const error = missingTracingPackage(notFound('@opentelemetry/sdk-trace-node'), '@opentelemetry/sdk-trace-node');
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toBe(`tracing needs @opentelemetry/sdk-trace-node (OTEL_* variables turn tracing on); install: ${TRACING_INSTALL}`);
    expect(TRACING_INSTALL).toBe(
      'npm install @temporalio/interceptors-opentelemetry @opentelemetry/sdk-trace-node @opentelemetry/sdk-trace-base @opentelemetry/resources @opentelemetry/exporter-trace-otlp-http',
    );
  });

  it('names the package a tracing package itself could not load (a dependency of it)', () => {
    const error = missingTracingPackage(notFound('@opentelemetry/resources/build/src'), '@temporalio/interceptors-opentelemetry');
    expect(error.message).toMatch(/^tracing needs @opentelemetry\/resources /);
  });

  it('passes other errors through', () => {
    const other = new SyntaxError('bad');
    expect(missingTracingPackage(other, '@opentelemetry/resources')).toBe(other);
  });
});

describe('OpenTelemetry 1.x and 2.x', () => {
  it('builds the resource with the 1.x API (Resource, envDetectorSync)', () => {
    const previous = process.env.OTEL_SERVICE_NAME;
    process.env.OTEL_SERVICE_NAME = 'from-env';
    try {
      const resource = resourceFromEnv(resources1 as never) as unknown as { attributes: Record<string, unknown> };
      expect(resource.attributes['service.name']).toBe('from-env');
    } finally {
      if (previous === undefined) delete process.env.OTEL_SERVICE_NAME;
      else process.env.OTEL_SERVICE_NAME = previous;
    }
    expect((resourceFromEnv(resources1 as never) as unknown as { attributes: Record<string, unknown> }).attributes['service.name']).toBe('keel');
  });

  it('builds the resource with the 2.x API (resourceFromAttributes, detectResources) when it is there', () => {
    const calls: unknown[] = [];
    const made = (attributes: Record<string, string>) => ({
      attributes,
      merge: (other: { attributes: Record<string, string> }) => made({ ...attributes, ...other.attributes }),
    });
    const envDetector = { detect: () => ({}) };
    const resource = resourceFromEnv({
      resourceFromAttributes: made,
      envDetector,
      detectResources: (config: { detectors: unknown[] }) => {
        calls.push(config);
        return made({ 'service.name': 'from-env' });
      },
    } as never) as unknown as { attributes: Record<string, string> };
    expect(calls).toEqual([{ detectors: [envDetector] }]);
    expect(resource.attributes).toEqual({ 'service.name': 'from-env' });
  });

  it('gives a workflow span (1.x field names) the 2.x names too', () => {
    const span = withSpanFieldsOfBothVersions({
      spanContext: () => ({ traceId: 't1', spanId: 's2', traceFlags: 1 }),
      parentSpanId: 's1',
      instrumentationLibrary: { name: '@temporalio/interceptor-workflow' },
    });
    expect(span).toMatchObject({
      instrumentationScope: { name: '@temporalio/interceptor-workflow' },
      parentSpanContext: { traceId: 't1', spanId: 's1', traceFlags: 1, isRemote: false },
    });
    const root = withSpanFieldsOfBothVersions({ spanContext: () => ({ traceId: 't1' }), instrumentationLibrary: { name: 'x' } });
    expect((root as Record<string, unknown>).parentSpanContext).toBeUndefined();
  });
});
