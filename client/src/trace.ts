// Trace context for the client: an opt-in entry point, so the core client carries none of
// it. It depends on no tracing library: give it a function that returns the caller's
// active span context (with OpenTelemetry JS, () => trace.getActiveSpan()?.spanContext()).

/** The parts of a span context a W3C traceparent carries (OpenTelemetry's SpanContext fits). */
export interface SpanContextLike {
  traceId: string;
  spanId: string;
  /** 1 when sampled. */
  traceFlags?: number;
}

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;

/** The W3C traceparent of sc, or undefined when sc is not a valid span context. */
export function traceparent(sc: SpanContextLike | undefined): string | undefined {
  if (!sc || !TRACE_ID.test(sc.traceId) || !SPAN_ID.test(sc.spanId) || /^0+$/.test(sc.traceId) || /^0+$/.test(sc.spanId)) {
    return undefined;
  }
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags ?? 0) & 1 ? "01" : "00"}`;
}

/**
 * A headers function for createClient's or createTransport's headers option: every
 * request carries the traceparent of the span active when it is sent, so the server's
 * span of the call continues the caller's trace; none when no span is active.
 *
 *   createClient(app, url, { headers: traceHeaders(() => trace.getActiveSpan()?.spanContext()) })
 */
export function traceHeaders(active: () => SpanContextLike | undefined): () => Record<string, string> {
  return () => {
    const h: Record<string, string> = {};
    const tp = traceparent(active());
    if (tp) h.traceparent = tp;
    return h;
  };
}
