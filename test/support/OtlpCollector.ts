/**
 * OtlpCollector: a real OTLP/HTTP JSON receiver on 127.0.0.1 (port 0) for tests, closed with its
 * Scope. It records every POST to /v1/traces and /v1/metrics (the raw body, as sent) and answers
 * 200 `{}` as a collector does; `awaitSpans` / `awaitMetrics` wait on the real condition (re-checked
 * at every body that arrives), never on a timer.
 *
 *   const collector = yield* OtlpCollector.make
 *   env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }
 *   const spans = yield* collector.awaitSpans((all) => all.some((s) => s.name === "baton.task"))
 */
import { Deferred, Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export interface Span {
  readonly service: string
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly kind: number
  readonly attributes: Readonly<Record<string, unknown>>
  readonly events: ReadonlyArray<{ readonly name: string; readonly attributes: Readonly<Record<string, unknown>> }>
  readonly status: { readonly code: number; readonly message?: string }
}

export interface MetricPoint {
  readonly service: string
  readonly name: string
  readonly kind: "sum" | "gauge" | "histogram"
  readonly attributes: Readonly<Record<string, unknown>>
  /** A sum's or gauge's value; a histogram's sum. */
  readonly value: number
  readonly count?: number
}

interface AnyValue {
  readonly stringValue?: string
  readonly intValue?: number | string
  readonly doubleValue?: number
  readonly boolValue?: boolean
  readonly arrayValue?: { readonly values: ReadonlyArray<AnyValue> }
}
interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}

const valueOf = (v: AnyValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ??
    (v.arrayValue !== undefined ? v.arrayValue.values.map(valueOf) : undefined)

const attributesOf = (list: ReadonlyArray<KeyValue> | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]))

interface Waiter<A> {
  readonly ready: (all: ReadonlyArray<A>) => boolean
  readonly done: Deferred.Deferred<ReadonlyArray<A>>
}

export const make = Effect.gen(function*() {
  const bodies: Array<{ readonly path: string; readonly body: string; readonly headers: Http.IncomingHttpHeaders }> = []
  const spans: Array<Span> = []
  const points: Array<MetricPoint> = []
  const spanWaiters = new Set<Waiter<Span>>()
  const metricWaiters = new Set<Waiter<MetricPoint>>()

  const check = <A>(waiters: Set<Waiter<A>>, all: ReadonlyArray<A>) => {
    for (const waiter of waiters) {
      if (!waiter.ready(all)) continue
      waiters.delete(waiter)
      Deferred.unsafeDone(waiter.done, Effect.succeed([...all]))
    }
  }

  const record = (path: string, body: string) => {
    const json = JSON.parse(body) as Record<string, ReadonlyArray<Record<string, unknown>>>
    if (path === "/v1/traces") {
      for (const rs of json["resourceSpans"] ?? []) {
        const service = String(attributesOf((rs["resource"] as { attributes: ReadonlyArray<KeyValue> }).attributes)["service.name"])
        for (const ss of rs["scopeSpans"] as ReadonlyArray<{ spans: ReadonlyArray<Record<string, unknown>> }>) {
          for (const s of ss.spans) {
            spans.push({
              service,
              traceId: String(s["traceId"]),
              spanId: String(s["spanId"]),
              parentSpanId: typeof s["parentSpanId"] === "string" && s["parentSpanId"] !== "" ? s["parentSpanId"] : undefined,
              name: String(s["name"]),
              kind: Number(s["kind"]),
              attributes: attributesOf(s["attributes"] as ReadonlyArray<KeyValue>),
              events: (s["events"] as ReadonlyArray<{ name: string; attributes: ReadonlyArray<KeyValue> }>).map((e) => ({
                name: e.name,
                attributes: attributesOf(e.attributes)
              })),
              status: s["status"] as Span["status"]
            })
          }
        }
      }
      check(spanWaiters, spans)
    } else if (path === "/v1/metrics") {
      for (const rm of json["resourceMetrics"] ?? []) {
        const service = String(attributesOf((rm["resource"] as { attributes: ReadonlyArray<KeyValue> }).attributes)["service.name"])
        for (const sm of rm["scopeMetrics"] as ReadonlyArray<{ metrics: ReadonlyArray<Record<string, unknown>> }>) {
          for (const m of sm.metrics) {
            const name = String(m["name"])
            for (const kind of ["sum", "gauge", "histogram"] as const) {
              const data = m[kind] as { dataPoints: ReadonlyArray<Record<string, unknown>> } | undefined
              for (const p of data?.dataPoints ?? []) {
                points.push({
                  service,
                  name,
                  kind,
                  attributes: attributesOf(p["attributes"] as ReadonlyArray<KeyValue>),
                  value: Number(p["asInt"] ?? p["asDouble"] ?? p["sum"] ?? 0),
                  ...(p["count"] !== undefined ? { count: Number(p["count"]) } : {})
                })
              }
            }
          }
        }
      }
      check(metricWaiters, points)
    }
  }

  const server = Http.createServer((request, response) => {
    let body = ""
    request.setEncoding("utf8").on("data", (c: string) => (body += c)).on("end", () => {
      const path = request.url ?? ""
      bodies.push({ path, body, headers: request.headers })
      if (request.method === "POST") record(path, body)
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  const port = yield* Effect.acquireRelease(
    Effect.async<number>((resume) => {
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
    }),
    () => Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
  )

  const awaiting = <A>(waiters: Set<Waiter<A>>, all: ReadonlyArray<A>, ready: (all: ReadonlyArray<A>) => boolean) =>
    Effect.gen(function*() {
      if (ready(all)) return [...all] as ReadonlyArray<A>
      const done = yield* Deferred.make<ReadonlyArray<A>>()
      const waiter = { ready, done }
      waiters.add(waiter)
      return yield* Deferred.await(done).pipe(Effect.ensuring(Effect.sync(() => waiters.delete(waiter))))
    })

  return {
    url: `http://127.0.0.1:${port}`,
    /** Every body received, raw, with its path and headers. */
    bodies: (): ReadonlyArray<{ readonly path: string; readonly body: string; readonly headers: Http.IncomingHttpHeaders }> => [...bodies],
    spans: (): ReadonlyArray<Span> => [...spans],
    awaitSpans: (ready: (all: ReadonlyArray<Span>) => boolean) => awaiting(spanWaiters, spans, ready),
    awaitMetrics: (ready: (all: ReadonlyArray<MetricPoint>) => boolean) => awaiting(metricWaiters, points, ready)
  }
})

export type OtlpCollector = Effect.Effect.Success<typeof make>

/** The spans of one trace, as a parent → children tree walk helper. */
export const ancestors = (spans: ReadonlyArray<Span>, span: Span): ReadonlyArray<Span> => {
  const byId = new Map(spans.map((s) => [s.spanId, s]))
  const out: Array<Span> = []
  let at = span.parentSpanId !== undefined ? byId.get(span.parentSpanId) : undefined
  while (at !== undefined) {
    out.push(at)
    at = at.parentSpanId !== undefined ? byId.get(at.parentSpanId) : undefined
  }
  return out
}
