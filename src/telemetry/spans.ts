/**
 * keel's own spans, through the OpenTelemetry API (a no-op until a process sets up tracing,
 * see tracing.ts): `keel.run <agent>` around starting a run, `keel.model <model>` around a
 * model call and `keel.tool <tool>` around a tool call, inside Temporal's activity spans, with
 * the run, agent, usage and finish reason as attributes. Node side.
 */
import { SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';

const tracer = () => trace.getTracer('keel');

/** Runs `work` in a span named `name`; a thrown error marks the span failed (and is rethrown). */
export async function inSpan<T>(name: string, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message ?? String(error) });
      throw error;
    } finally {
      span.end();
    }
  });
}
