import * as OtlpMetrics from "@effect/opentelemetry/OtlpMetrics"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { Layer, Redacted } from "effect"
import { Telemetry } from "../../domain/Telemetry.js"

/**
 * services/telemetry/ holds the exporter of Baton's spans and metrics: Effect's own tracer and metric
 * registry posted as OTLP over HTTP (@effect/opentelemetry's Otlp modules on the platform HttpClient;
 * no OpenTelemetry SDK). Loaded only when the environment asks for telemetry. Logs are not exported:
 * they stay on stderr, and the spans already carry what a log line would.
 */

export interface OtlpOptions {
  readonly serviceName: string
  readonly serviceVersion: string
  readonly protocol: "http/json" | "http/protobuf"
  /** Full URL of the traces endpoint (…/v1/traces); none: no spans exported. */
  readonly tracesUrl: string | undefined
  /** Full URL of the metrics endpoint (…/v1/metrics); none: no metrics exported. */
  readonly metricsUrl: string | undefined
  /** Sent with every export (often a collector's API key, so never shown). */
  readonly headers: Redacted.Redacted<Record<string, string>>
  readonly tracesIntervalMs: number
  readonly metricsIntervalMs: number
  /** How long the last export may take as the program ends (a collector that is down must not hold up an exit). */
  readonly shutdownTimeoutMs: number
  /** Prompts, model output, tool arguments and results go with the spans. */
  readonly content: boolean
}

/** Installs the tracer and the metrics exporter the options name, and tells Baton's programs they are on. */
export const layer = (options: OtlpOptions): Layer.Layer<never> => {
  const resource = { serviceName: options.serviceName, serviceVersion: options.serviceVersion }
  const headers = Redacted.value(options.headers)
  const traces = options.tracesUrl === undefined
    ? Layer.empty
    : OtlpTracer.layer({ url: options.tracesUrl, resource, headers, exportInterval: options.tracesIntervalMs, shutdownTimeout: options.shutdownTimeoutMs })
  const metrics = options.metricsUrl === undefined
    ? Layer.empty
    : OtlpMetrics.layer({ url: options.metricsUrl, resource, headers, exportInterval: options.metricsIntervalMs, shutdownTimeout: options.shutdownTimeoutMs })
  const settings = Layer.succeed(Telemetry, {
    tracing: options.tracesUrl !== undefined,
    metrics: options.metricsUrl !== undefined,
    content: options.content
  })
  return Layer.mergeAll(traces, metrics, settings).pipe(
    Layer.provide(options.protocol === "http/protobuf" ? OtlpSerialization.layerProtobuf : OtlpSerialization.layerJson),
    Layer.provide(FetchHttpClient.layer)
  )
}
