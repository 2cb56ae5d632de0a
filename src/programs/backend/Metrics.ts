import { Effect, Metric, MetricBoundaries, type MetricKeyType, type MetricState } from "effect"
import type { TokenUsage } from "../../domain/Events.js"
import { Telemetry } from "../../domain/Telemetry.js"

/**
 * The backend's metrics, Effect's own (effect/Metric): kept in the process's registry, exported only
 * where the composition root installs an exporter (`baton serve` with OTEL_* set). Names and units
 * follow the OpenTelemetry GenAI conventions where they have one.
 */

/** Runs executing now (an up-down counter). */
const runsActive = Metric.counter("baton.runs.active", { description: "Runs executing now" })

/** Chunks committed to the store (and so delivered). */
export const chunksPersisted = Metric.counter("baton.chunks.persisted", { description: "Run chunks committed to the store", incremental: true })

const duration = Metric.histogram(
  "gen_ai.client.operation.duration",
  MetricBoundaries.fromIterable([0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]),
  "Duration of model requests, in seconds"
).pipe(Metric.tagged("unit", "s"))

const tokenUsage = Metric.histogram(
  "gen_ai.client.token.usage",
  MetricBoundaries.fromIterable([1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216]),
  "Tokens per model request, by type (input, output)"
)

/** Tokens used, by model and type: a running total per model. */
const tokens = Metric.counter("baton.tokens", { description: "Tokens used by model requests, by model and type", incremental: true })

/**
 * `update` only where an exporter reads the metrics: each update looks its metric up in the process's
 * registry by its name and tags (hashed and compared structurally), several times a send for nothing
 * when none is installed.
 */
const exported = (update: () => Effect.Effect<void>): Effect.Effect<void> => Effect.flatMap(Telemetry, (t) => (t.metrics ? update() : Effect.void))

export const activeRuns = {
  /** Counts `self` as an active run while it executes. */
  track: <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(Telemetry, (t) =>
      t.metrics ? Effect.acquireUseRelease(Metric.increment(runsActive), () => self, () => Metric.incrementBy(runsActive, -1)) : self)
}

export interface RequestTags {
  readonly provider: string
  readonly model: string
}

const tagged = (metric: Metric.Metric<MetricKeyType.MetricKeyType.Histogram, number, MetricState.MetricState.Histogram>, tags: RequestTags) =>
  metric.pipe(Metric.tagged("gen_ai.operation.name", "chat"), Metric.tagged("gen_ai.provider.name", tags.provider), Metric.tagged("gen_ai.request.model", tags.model))

/** One model request's duration (and its error type, when it failed). */
export const recordRequest = (tags: RequestTags, seconds: number, errorType: string | undefined) =>
  exported(() => Metric.update(errorType === undefined ? tagged(duration, tags) : tagged(duration, tags).pipe(Metric.tagged("error.type", errorType)), seconds))

/** One model request's usage. */
export const recordUsage = (tags: RequestTags, usage: TokenUsage) =>
  exported(() => Effect.all([
    Metric.update(tagged(tokenUsage, tags).pipe(Metric.tagged("gen_ai.token.type", "input")), usage.input_tokens),
    Metric.update(tagged(tokenUsage, tags).pipe(Metric.tagged("gen_ai.token.type", "output")), usage.output_tokens),
    Metric.incrementBy(tokens.pipe(Metric.tagged("gen_ai.request.model", tags.model), Metric.tagged("gen_ai.token.type", "input")), usage.input_tokens),
    Metric.incrementBy(tokens.pipe(Metric.tagged("gen_ai.request.model", tags.model), Metric.tagged("gen_ai.token.type", "output")), usage.output_tokens)
  ], { discard: true }))
