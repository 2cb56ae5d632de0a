import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Redacted } from "effect"
import { telemetryConfig } from "../../src/programs/cli/TelemetryConfig.js"

/** The OTEL_* variables as the composition root reads them (programs/cli/TelemetryConfig.ts). */

const withEnv = (env: Record<string, string>) => Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
const traces = { metrics: false }
const serve = { metrics: true }

describe("telemetry from the environment", () => {
  it.effect("nothing set, or OTEL_SDK_DISABLED=true: no telemetry", () =>
    Effect.gen(function*() {
      assert.isUndefined(yield* telemetryConfig(serve).pipe(withEnv({})))
      assert.isUndefined(yield* telemetryConfig(serve).pipe(withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "TRUE" })))
      assert.isUndefined(yield* telemetryConfig(traces).pipe(withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_TRACES_EXPORTER: "none" })))
    }))

  it.effect("OTEL_EXPORTER_OTLP_ENDPOINT is a base: /v1/traces and (serve only) /v1/metrics; service name baton by default", () =>
    Effect.gen(function*() {
      const run = yield* telemetryConfig(traces).pipe(withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }))
      assert.deepInclude(run!, { serviceName: "baton", protocol: "http/json", tracesUrl: "http://collector:4318/v1/traces", metricsUrl: undefined, content: false, shutdownTimeoutMs: 1000 })
      const served = yield* telemetryConfig(serve).pipe(withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SERVICE_NAME: "team-baton" }))
      assert.deepInclude(served!, { serviceName: "team-baton", metricsUrl: "http://collector:4318/v1/metrics" })
      const named = yield* telemetryConfig(traces).pipe(withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_RESOURCE_ATTRIBUTES: "team=a, service.name = from-attrs" }))
      assert.strictEqual(named!.serviceName, "from-attrs")
      const noMetrics = yield* telemetryConfig(serve).pipe(withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_METRICS_EXPORTER: "none" }))
      assert.isUndefined(noMetrics!.metricsUrl)
    }))

  it.effect("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as it is; headers are decoded and kept redacted; BATON_OTEL_CONTENT=1", () =>
    Effect.gen(function*() {
      const config = yield* telemetryConfig(traces).pipe(withEnv({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://otlp.example.com/custom/traces",
        OTEL_EXPORTER_OTLP_HEADERS: "x-honeycomb-team=abc%3D123, x-tenant = t1",
        BATON_OTEL_CONTENT: "1"
      }))
      assert.strictEqual(config!.tracesUrl, "https://otlp.example.com/custom/traces")
      assert.deepStrictEqual(Redacted.value(config!.headers), { "x-honeycomb-team": "abc=123", "x-tenant": "t1" })
      assert.notInclude(String(config!.headers), "abc")
      assert.isTrue(config!.content)
    }))

  it.effect("a value that cannot be used is a ConfigError naming the variable (and never quoting a header's value)", () =>
    Effect.gen(function*() {
      const base = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }
      const cases: ReadonlyArray<readonly [Record<string, string>, string]> = [
        [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, "OTEL_EXPORTER_OTLP_ENDPOINT"],
        [{ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, "OTEL_EXPORTER_OTLP_PROTOCOL"],
        [{ ...base, OTEL_TRACES_EXPORTER: "jaeger" }, "OTEL_TRACES_EXPORTER"],
        [{ ...base, OTEL_BSP_SCHEDULE_DELAY: "soon" }, "OTEL_BSP_SCHEDULE_DELAY"],
        [{ ...base, OTEL_EXPORTER_OTLP_HEADERS: "secret-without-key" }, "OTEL_EXPORTER_OTLP_HEADERS"]
      ]
      for (const [env, field] of cases) {
        const error = yield* Effect.flip(telemetryConfig(traces).pipe(withEnv(env)))
        assert.strictEqual(error._tag, "ConfigError")
        assert.strictEqual(error.field, field)
        assert.notInclude(error.message, "secret-without-key")
      }
    }))
})
