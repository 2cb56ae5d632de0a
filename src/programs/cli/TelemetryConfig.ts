import { Config, Effect, Option, Redacted } from "effect"
import { ConfigError } from "../../domain/Errors.js"
import type { OtlpOptions } from "../../services/telemetry/Otlp.js"

/**
 * Where telemetry goes, from the standard OpenTelemetry variables (and Baton's one addition,
 * BATON_OTEL_CONTENT). Nothing set means nothing exported and nothing loaded: `undefined`. Read with
 * Effect Config; a value that cannot be used stops the command with the variable named, like any
 * other configuration error (a typo must not silently drop an operator's traces).
 */

/** What the exporter needs, less what the program knows itself (its version). */
export type TelemetryConfig = Omit<OtlpOptions, "serviceVersion">

const SOURCE = "environment"

const fail = (field: string, message: string) => new ConfigError({ source: SOURCE, field, message })

const variable = (name: string) =>
  Config.option(Config.string(name)).pipe(
    Effect.map(Option.filter((value) => value.trim() !== "")),
    Effect.map(Option.getOrUndefined),
    Effect.mapError(() => fail(name, `${name} cannot be read`))
  )

const url = (name: string, value: string) =>
  URL.canParse(value) && /^https?:$/.test(new URL(value).protocol)
    ? Effect.succeed(value)
    : Effect.fail(fail(name, `${name} must be an http(s) URL, got "${value}"`))

/** `key=value,key2=value2`, values URL-encoded (the OpenTelemetry specification's format). */
const headerList = (name: string, value: string | undefined) =>
  Effect.gen(function*() {
    const headers: Record<string, string> = {}
    if (value === undefined) return headers
    for (const pair of value.split(",")) {
      if (pair.trim() === "") continue
      const eq = pair.indexOf("=")
      const key = eq > 0 ? pair.slice(0, eq).trim() : ""
      // The value is not quoted back: it is usually a credential.
      if (key === "") return yield* fail(name, `${name} must be a list of key=value pairs separated by commas`)
      const decoded = Option.liftThrowable(decodeURIComponent)(pair.slice(eq + 1).trim())
      if (Option.isNone(decoded)) return yield* fail(name, `${name}: the value of ${key} is not valid URL encoding`)
      headers[key.toLowerCase()] = decoded.value
    }
    return headers
  })

const exporter = (name: string) =>
  Effect.flatMap(variable(name), (value) => {
    const v = (value ?? "otlp").trim().toLowerCase()
    return v === "otlp" || v === "none"
      ? Effect.succeed(v === "otlp")
      : Effect.fail(fail(name, `${name} must be "otlp" or "none", got "${value}"`))
  })

const millis = (name: string, fallback: number) =>
  Effect.flatMap(variable(name), (value) => {
    if (value === undefined) return Effect.succeed(fallback)
    const n = Number(value)
    return Number.isInteger(n) && n > 0 ? Effect.succeed(n) : Effect.fail(fail(name, `${name} must be a positive integer (milliseconds), got "${value}"`))
  })

const protocolOf = (name: string, value: string | undefined) => {
  const v = value ?? "http/json"
  return v === "http/json" || v === "http/protobuf"
    ? Effect.succeed<OtlpOptions["protocol"]>(v)
    : Effect.fail(fail(name, `${name} "${v}" is not supported: Baton exports OTLP over HTTP, "http/json" (the default) or "http/protobuf" (port 4318, not gRPC's 4317)`))
}

const joined = (base: string, path: string) => `${base.replace(/\/+$/, "")}${path}`

/**
 * The telemetry the environment asks for, or `undefined` when it asks for none: no endpoint set,
 * OTEL_SDK_DISABLED=true, or every signal this command exports set to `none`.
 */
export const telemetryConfig = (options: { readonly metrics: boolean }): Effect.Effect<TelemetryConfig | undefined, ConfigError> =>
  Effect.gen(function*() {
    if ((yield* variable("OTEL_SDK_DISABLED"))?.trim().toLowerCase() === "true") return undefined
    const base = yield* variable("OTEL_EXPORTER_OTLP_ENDPOINT")
    const tracesEndpoint = yield* variable("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    const metricsEndpoint = yield* variable("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
    if (base === undefined && tracesEndpoint === undefined && metricsEndpoint === undefined) return undefined
    if (base !== undefined) yield* url("OTEL_EXPORTER_OTLP_ENDPOINT", base)
    const traces = (yield* exporter("OTEL_TRACES_EXPORTER"))
      ? tracesEndpoint !== undefined
        ? yield* url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", tracesEndpoint)
        : base !== undefined ? joined(base, "/v1/traces") : undefined
      : undefined
    const metrics = options.metrics && (yield* exporter("OTEL_METRICS_EXPORTER"))
      ? metricsEndpoint !== undefined
        ? yield* url("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", metricsEndpoint)
        : base !== undefined ? joined(base, "/v1/metrics") : undefined
      : undefined
    if (traces === undefined && metrics === undefined) return undefined
    const headers = yield* headerList("OTEL_EXPORTER_OTLP_HEADERS", yield* variable("OTEL_EXPORTER_OTLP_HEADERS"))
    return {
      // The specification's order: OTEL_SERVICE_NAME, then a service.name in OTEL_RESOURCE_ATTRIBUTES, then ours.
      serviceName: (yield* variable("OTEL_SERVICE_NAME")) ??
        /(?:^|,)\s*service\.name\s*=\s*([^,]+)/.exec((yield* variable("OTEL_RESOURCE_ATTRIBUTES")) ?? "")?.[1]?.trim() ?? "baton",
      protocol: yield* protocolOf("OTEL_EXPORTER_OTLP_PROTOCOL", yield* variable("OTEL_EXPORTER_OTLP_PROTOCOL")),
      tracesUrl: traces,
      metricsUrl: metrics,
      headers: Redacted.make(headers),
      tracesIntervalMs: yield* millis("OTEL_BSP_SCHEDULE_DELAY", 5_000),
      metricsIntervalMs: yield* millis("OTEL_METRIC_EXPORT_INTERVAL", 60_000),
      // Shorter than the specification's 10 s: it bounds how long a command waits at exit for a collector that is down.
      shutdownTimeoutMs: yield* millis("OTEL_EXPORTER_OTLP_TIMEOUT", 1_000),
      content: (yield* variable("BATON_OTEL_CONTENT")) === "1"
    } satisfies TelemetryConfig
  })
