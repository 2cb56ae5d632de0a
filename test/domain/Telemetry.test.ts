import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Option, Tracer } from "effect"
import * as PE from "../../src/domain/ProviderError.js"
import { turnBudgets } from "../../src/domain/Recovery.js"
import { retry } from "../../src/domain/RecoverySchedule.js"
import { Telemetry, toolSpan, withOutcomeSpan } from "../../src/domain/Telemetry.js"
import { Otid, ToolCallId } from "../../src/domain/Ids.js"

/** Baton's spans as any Effect tracer sees them: a recording tracer, no exporter. */

interface Recorded {
  readonly name: string
  readonly attributes: Map<string, unknown>
  readonly events: Array<readonly [string, Record<string, unknown> | undefined]>
  ends: Array<Exit.Exit<unknown, unknown>>
}

const recording = () => {
  const spans: Array<Recorded> = []
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      const recorded: Recorded = { name, attributes: new Map(), events: [], ends: [] }
      spans.push(recorded)
      const span: Tracer.Span = {
        _tag: "Span",
        name,
        spanId: String(spans.length),
        traceId: "t",
        parent,
        context,
        status: { _tag: "Started", startTime },
        attributes: recorded.attributes,
        links,
        sampled: true,
        kind,
        end: (_end, exit) => void recorded.ends.push(exit),
        attribute: (key, value) => void recorded.attributes.set(key, value),
        event: (eventName, _time, attributes) => void recorded.events.push([eventName, attributes]),
        addLinks: () => undefined
      }
      return span
    },
    context: (f) => f()
  })
  return { spans, tracer }
}

const call = { type: "tool_call", tool_call_id: ToolCallId.make("c1"), name: "Read", arguments: "{\"file_path\":\"secret-path\"}" } as const
const result = (status: "success" | "error") =>
  ({ type: "tool_return", tool_call_id: ToolCallId.make("c1"), status, content: "file-contents", otid: Otid.make("o1") }) as const

describe("telemetry (domain)", () => {
  it.effect("every retry the policy decides is a baton.retry event on the span that retries: error tag, delay, attempt", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recording()
      let calls = 0
      const attempt = Effect.suspend(() => (++calls < 3 ? Effect.fail(new PE.ProviderServerError({ status: 503, message: "down" })) : Effect.succeed("ok")))
      yield* retry(attempt, { budgets: turnBudgets, wait: () => Effect.void, orElse: Effect.fail }).pipe(Effect.withSpan("outer"), Effect.withTracer(tracer))
      const outer = spans.find((s) => s.name === "outer")!
      assert.deepStrictEqual(outer.events, [
        ["baton.retry", { "error.type": "ProviderServerError", "baton.retry.decision": "Retry", "baton.retry.attempt": 1, "baton.retry.delay_ms": 250 }],
        ["baton.retry", { "error.type": "ProviderServerError", "baton.retry.decision": "Retry", "baton.retry.attempt": 2, "baton.retry.delay_ms": 500 }]
      ])
    }))

  it.effect("withOutcomeSpan: an error the effect recorded ends its span failed; the value passes through", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recording()
      const value = yield* withOutcomeSpan(Effect.succeed(42), "baton.run", {}, () => Effect.succeed(Option.some({ tag: "ProviderAuth", message: "refused" }))).pipe(
        Effect.withTracer(tracer)
      )
      assert.strictEqual(value, 42)
      const [run] = spans
      assert.strictEqual(run!.ends.length, 1)
      assert.isTrue(Exit.isFailure(run!.ends[0]!))
      assert.strictEqual(run!.attributes.get("error.type"), "ProviderAuth")
      yield* withOutcomeSpan(Effect.succeed(1), "baton.run", {}, () => Effect.succeed(Option.none())).pipe(Effect.withTracer(tracer))
      assert.isTrue(Exit.isSuccess(spans[1]!.ends[0]!))
    }))

  it.effect("execute_tool: ended once whatever ends it; contents only with content on", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recording()
      yield* Effect.gen(function*() {
        const traced = yield* toolSpan(call)
        yield* traced.decided({ type: "approval_decision", tool_call_id: call.tool_call_id, decision: "allow", source: "rule", rule: "Read" })
        yield* traced.end(result("error"))
        yield* traced.end(undefined)
      }).pipe(Effect.withTracer(tracer))
      const [tool] = spans
      assert.strictEqual(tool!.name, "execute_tool Read")
      assert.strictEqual(tool!.ends.length, 1, "ended once")
      assert.isTrue(Exit.isFailure(tool!.ends[0]!), "a tool that reported an error")
      assert.deepStrictEqual(
        [tool!.attributes.get("baton.approval.decision"), tool!.attributes.get("baton.approval.source"), tool!.attributes.get("baton.tool.status")],
        ["allow", "rule", "error"]
      )
      assert.isFalse([...tool!.attributes.values()].some((v) => String(v).includes("secret-path") || String(v).includes("file-contents")))

      yield* Effect.gen(function*() {
        const traced = yield* toolSpan(call)
        yield* traced.end(result("success"))
      }).pipe(Effect.withTracer(tracer), Effect.provideService(Telemetry, { tracing: true, metrics: false, content: true }))
      assert.strictEqual(spans[1]!.attributes.get("gen_ai.tool.call.arguments"), call.arguments)
      assert.strictEqual(spans[1]!.attributes.get("gen_ai.tool.call.result"), "file-contents")
    }))
})
