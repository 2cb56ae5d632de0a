import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { TaskEvent } from "../../src/domain/Events.js"
import { cliDirs, jsonEvents, runCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { type RecordedRequest, Reply } from "../support/MockModelServer.js"
import type { Wire } from "../support/MockWire.js"

/**
 * The fault matrix through `baton run --json` against the loopback mock: for each fault, the policy's
 * action (the request_end statuses and retry_in_ms the run announces), how many requests the model
 * got, the delay the client left between them (from the mock's clock), the exit code, and that no
 * tool ran twice: every task first runs a tool (its executions are logged), and the fault hits the
 * request that carries its result. The timeouts are set short through their environment variables;
 * every wait is the policy's own (250 ms, doubling; or the server's retry-after).
 */

/**
 * Short for the two tests that exercise a timeout; the others keep the defaults, so a loaded machine
 * (16 CLI children at once) never turns a slow first byte into a fault the test did not inject.
 */
const TIMEOUT_MS = 1000

/** A call whose every execution leaves a line in a log (executions are counted, not inferred). */
const logCall = (id: string) => ({ id, name: "Bash", args: { command: `echo ${id} >> calls.log; echo ran` } })

interface Outcome {
  readonly code: number | null
  /** The events from the faulty request on. */
  readonly events: ReadonlyArray<TaskEvent>
  /** The requests from the faulty one on (the tool round before it is left out). */
  readonly requests: ReadonlyArray<RecordedRequest>
  /** How long the client waited before each request after the faulty one: from the end of the previous response (or its connection) to the next arrival. */
  readonly gaps: ReadonlyArray<number>
  /** From one arrival to the next (for a timeout, whose end is the client's to choose): the timeout plus the wait. */
  readonly arrivals: ReadonlyArray<number>
  readonly executions: ReadonlyArray<string>
  readonly stderr: string
  /** What the tool round's call returned (said when an execution is missing). */
  readonly c0: string
}

const run = (faulty: ReadonlyArray<Reply>, options: {
  readonly wire?: Wire
  readonly respond?: (r: RecordedRequest) => Reply
  /** A first task to continue (the fault then hits the continued one). */
  readonly continueWith?: ReadonlyArray<Reply>
  /** Sets the first-byte and stall timeouts to TIMEOUT_MS. */
  readonly shortTimeouts?: boolean
} = {}) =>
  Effect.gen(function*() {
    const tool = Reply.toolCalls([logCall("c0")])
    const replies = [tool, ...faulty]
    const server = yield* MockModelServer.make({ replies, ...(options.respond !== undefined ? { respond: options.respond } : {}) })
    const dirs = yield* cliDirs
    const env = {
      ...server.childEnv(options.wire ?? "openai-chat"),
      BATON_HOME: dirs.home,
      ...(options.shortTimeouts === true ? { BATON_FIRST_BYTE_TIMEOUT_MS: String(TIMEOUT_MS), BATON_STALL_TIMEOUT_MS: String(TIMEOUT_MS) } : {})
    }
    const args = ["run", "--json", "--approve", "allow", "--workspace", dirs.workspace]
    if (options.continueWith !== undefined) {
      const first = yield* runCli([...args, "say hi"], { env })
      assert.strictEqual(first.code, 0, first.stderr)
      yield* server.enqueue(...options.continueWith)
    }
    const result = yield* runCli([...args, ...(options.continueWith !== undefined ? ["--continue"] : []), "do it"], { env })
    const requests = (yield* server.requests).slice(options.continueWith !== undefined ? 2 : 1)
    const log = Path.join(dirs.workspace, "calls.log")
    const events = jsonEvents(result.stdout)
    // Without a first task, the tool round comes first in this one: the fault is what follows it.
    const toolRound = options.continueWith !== undefined ? -1 : events.findIndex((e) => e.type === "stop_reason")
    return {
      code: result.code,
      events: events.slice(toolRound + 1),
      requests,
      gaps: requests.slice(1).map((r, i) => r.receivedAt - (requests[i]!.endedAt() ?? Number.NaN)),
      arrivals: requests.slice(1).map((r, i) => r.receivedAt - requests[i]!.receivedAt),
      executions: Fs.existsSync(log) ? Fs.readFileSync(log, "utf8").trim().split("\n").filter((l) => l !== "") : [],
      stderr: result.stderr,
      c0: JSON.stringify(events.find((e) => e.type === "tool_return" && e.tool_call_id === "c0") ?? null)
    } satisfies Outcome
  })

const ends = (events: ReadonlyArray<TaskEvent>) =>
  events.flatMap((e) => (e.type === "request_end" ? [[e.status, e.retry_in_ms ?? null, e.error?.tag ?? null]] : []))

const stop = (events: ReadonlyArray<TaskEvent>) => {
  const last = events.findLast((e) => e.type === "stop_reason")
  return last?.type === "stop_reason" ? [last.reason, last.error?.tag ?? null] : []
}

/**
 * A wait the policy asked for: at least that long, and not wildly longer (a loose bound, for a loaded
 * machine). `slack` covers what the mock's clock cannot see: when the client started its own timer.
 */
const assertGap = (gap: number | undefined, atLeast: number, slack = 5) => {
  assert.isDefined(gap)
  assert.isAtLeast(gap!, atLeast - slack, `waited ${gap} ms, the policy asked for ${atLeast}`)
  assert.isBelow(gap!, atLeast + 5_000, `waited ${gap} ms for ${atLeast}`)
}

const ok = Reply.text("recovered")

describe.concurrent("fault matrix: baton run --json against the mock", () => {
  it.scopedLive("first-byte timeout → reconnect after 250 ms; one request more; exit 0", () =>
    Effect.gen(function*() {
      const o = yield* run([Reply.text("never", {}, { hang: true }), ok], { shortTimeouts: true })
      assert.strictEqual(o.code, 0, o.stderr)
      assert.deepStrictEqual(o.executions, ["c0"], `the tool before the fault ran once: ${o.c0}`)
      assert.deepStrictEqual(ends(o.events), [["retrying", 250, "ProviderTimeout"], ["ok", null, null]])
      assert.strictEqual(o.requests.length, 2)
      assertGap(o.arrivals[0], TIMEOUT_MS + 250, 30)
    }))

  it.scopedLive("stall mid-stream → reconnect; the retry carries the partial text in [turn_retried]", () =>
    Effect.gen(function*() {
      const o = yield* run([Reply.text(["half ", "an ", "answer"], {}, { stallAfter: 3 }), ok], { shortTimeouts: true })
      assert.strictEqual(o.code, 0, o.stderr)
      assert.deepStrictEqual(o.executions, ["c0"], `the tool before the fault ran once: ${o.c0}`)
      assert.deepStrictEqual(ends(o.events), [["retrying", 250, "ProviderTimeout"], ["ok", null, null]])
      assertGap(o.arrivals[0], TIMEOUT_MS + 250, 30)
      assert.match(o.requests[1]!.body, /\[turn_retried\][\s\S]*half an[\s\S]*\[\/turn_retried\]/)
    }))

  it.scopedLive("connection reset after a complete tool call → reconnect; the call stands and runs once", () =>
    Effect.gen(function*() {
      // role, call start, two argument halves, finish: the call is complete when the socket dies.
      const o = yield* run([Reply.toolCalls([logCall("c1")], {}, { cutAfter: 5 }), Reply.text("carrying on"), Reply.text("done")])
      assert.strictEqual(o.code, 0, o.stderr)
      assert.deepStrictEqual(ends(o.events)[0], ["retrying", 250, "ProviderConnectionLost"])
      assert.match(o.requests[1]!.body, /\[turn_retried\][\s\S]*c1[\s\S]*\[\/turn_retried\]/)
      assert.strictEqual(o.requests.length, 3)
      assert.deepStrictEqual(o.executions, ["c0", "c1"])
    }))

  it.scopedLive("truncated SSE (the body ends mid-event) → reconnect after 250 ms", () =>
    Effect.gen(function*() {
      const o = yield* run([Reply.text(["some ", "text"], {}, { truncateAt: 150 }), ok])
      assert.strictEqual(o.code, 0, o.stderr)
      assert.deepStrictEqual(o.executions, ["c0"], `the tool before the fault ran once: ${o.c0}`)
      assert.deepStrictEqual(ends(o.events).map((e) => e.slice(0, 2)), [["retrying", 250], ["ok", null]])
      assertGap(o.gaps[0], 250)
    }))

  it.scopedLive("a malformed JSON line → ProviderMalformed, reconnect after 250 ms", () =>
    Effect.gen(function*() {
      const o = yield* run([Reply.sse(["data: {\"choices\": [ not json\n\n"]), ok])
      assert.strictEqual(o.code, 0, o.stderr)
      assert.deepStrictEqual(o.executions, ["c0"], `the tool before the fault ran once: ${o.c0}`)
      assert.deepStrictEqual(ends(o.events), [["retrying", 250, "ProviderMalformed"], ["ok", null, null]])
      assertGap(o.gaps[0], 250)
    }))

  it.scopedLive("429 with retry-after: 1 (seconds) → waits 1000 ms", () =>
    Effect.gen(function*() {
      const o = yield* run([Reply.status(429, { headers: { "retry-after": "1" } }), ok])
      assert.strictEqual(o.code, 0, o.stderr)
      assert.deepStrictEqual(o.executions, ["c0"], `the tool before the fault ran once: ${o.c0}`)
      assert.deepStrictEqual(ends(o.events), [["retrying", 1000, "ProviderRateLimited"], ["ok", null, null]])
      assertGap(o.gaps[0], 1000)
    }))

  it.scopedLive("429 with retry-after as an HTTP date → waits until that date", () =>
    Effect.gen(function*() {
      let answered = false
      // The date is made when the request arrives: two seconds ahead, at HTTP-date (whole second) precision.
      const o = yield* run([], {
        respond: () => {
          if (answered) return ok
          answered = true
          return Reply.status(429, { headers: { "retry-after": new Date(Date.now() + 2_000).toUTCString() } })
        }
      })
      assert.strictEqual(o.code, 0, o.stderr)
      assert.deepStrictEqual(o.executions, ["c0"], `the tool before the fault ran once: ${o.c0}`)
      const [first] = ends(o.events)
      assert.deepStrictEqual([first![0], first![2]], ["retrying", "ProviderRateLimited"])
      assert.isAtLeast(first![1] as number, 1_000)
      assert.isAtMost(first![1] as number, 2_000)
      assertGap(o.gaps[0], first![1] as number)
    }))

  it.scopedLive("500, 502, 503, 504 → the ladder 250, 500, 1000, 2000 ms, then the answer", () =>
    Effect.gen(function*() {
      const o = yield* run([500, 502, 503, 504].map((status) => Reply.status(status)).concat([ok]))
      assert.strictEqual(o.code, 0, o.stderr)
      assert.deepStrictEqual(o.executions, ["c0"], `the tool before the fault ran once: ${o.c0}`)
      assert.deepStrictEqual(ends(o.events).map((e) => e.slice(0, 2)), [["retrying", 250], ["retrying", 500], ["retrying", 1000], ["retrying", 2000], ["ok", null]])
      assert.isTrue(ends(o.events).slice(0, 4).every((e) => e[2] === "ProviderServerError"))
      assert.strictEqual(o.requests.length, 5)
      ;[250, 500, 1000, 2000].forEach((ms, i) => assertGap(o.gaps[i], ms))
    }))

  it.scopedLive("529 overloaded (Anthropic) → ProviderOverloaded, reconnect after 250 ms", () =>
    Effect.gen(function*() {
      const o = yield* run([Reply.errorFixture("errors/anthropic/529-overloaded-error"), ok], { wire: "anthropic" })
      assert.strictEqual(o.code, 0, o.stderr)
      assert.deepStrictEqual(o.executions, ["c0"], `the tool before the fault ran once: ${o.c0}`)
      assert.deepStrictEqual(ends(o.events), [["retrying", 250, "ProviderOverloaded"], ["ok", null, null]])
      assertGap(o.gaps[0], 250)
    }))

  it.scopedLive("401 → auth: one request, never retried, exit 3", () =>
    Effect.gen(function*() {
      const o = yield* run([Reply.errorFixture("errors/openai/401-invalid-api-key")])
      assert.strictEqual(o.code, 3)
      assert.deepStrictEqual(o.executions, ["c0"], `the tool before the fault ran once: ${o.c0}`)
      assert.deepStrictEqual(ends(o.events), [["auth", null, "ProviderAuth"]])
      assert.deepStrictEqual(stop(o.events), ["auth", "ProviderAuth"])
      assert.strictEqual(o.requests.length, 1)
    }))

  it.scopedLive("403 → auth: one request, never retried, exit 3", () =>
    Effect.gen(function*() {
      const o = yield* run([Reply.status(403, { body: JSON.stringify({ error: { type: "permission_error", message: "not allowed" } }) })])
      assert.strictEqual(o.code, 3)
      assert.deepStrictEqual(o.executions, ["c0"], `the tool before the fault ran once: ${o.c0}`)
      assert.deepStrictEqual(ends(o.events), [["auth", null, "ProviderAuth"]])
      assert.strictEqual(o.requests.length, 1)
    }))

  it.scopedLive("400 context overflow → compact, then retry: summary request, then the answer", () =>
    Effect.gen(function*() {
      const o = yield* run([Reply.text("hi")], {
        continueWith: [Reply.errorFixture("errors/openai/400-context-length-exceeded"), Reply.text("[summary]we said hi[/summary]"), ok]
      })
      assert.strictEqual(o.code, 0, o.stderr)
      assert.deepStrictEqual(o.executions, ["c0"], `the tool before the fault ran once: ${o.c0}`)
      assert.deepStrictEqual(ends(o.events), [["retrying", 0, "ProviderContextOverflow"], ["ok", null, null], ["ok", null, null]])
      assert.isTrue(o.events.some((e) => e.type === "compaction_end" && e.status === "ok"))
      assert.strictEqual(o.requests.length, 3)
      assert.match(o.requests[2]!.body, /\[context_summary\]\\nwe said hi\\n\[\/context_summary\]/)
    }))

  it.scopedLive("quota exhausted (insufficient_quota) → terminal: one request, exit 1", () =>
    Effect.gen(function*() {
      const body = JSON.stringify({ error: { type: "insufficient_quota", code: "insufficient_quota", message: "You exceeded your current quota" } })
      const o = yield* run([Reply.status(429, { body })])
      assert.strictEqual(o.code, 1)
      assert.deepStrictEqual(o.executions, ["c0"], `the tool before the fault ran once: ${o.c0}`)
      assert.deepStrictEqual(ends(o.events), [["failed", null, "ProviderQuotaExceeded"]])
      assert.strictEqual(o.requests.length, 1)
    }))

  it.scopedLive("a transient quota (429 resource_exhausted) → reconnect, honouring retry-after", () =>
    Effect.gen(function*() {
      const body = JSON.stringify({ error: { code: "resource_exhausted", message: "quota for this minute is used up" } })
      const o = yield* run([Reply.status(429, { body, headers: { "retry-after": "0.3" } }), ok])
      assert.strictEqual(o.code, 0, o.stderr)
      assert.deepStrictEqual(o.executions, ["c0"], `the tool before the fault ran once: ${o.c0}`)
      assert.deepStrictEqual(ends(o.events), [["retrying", 300, "ProviderTransientQuota"], ["ok", null, null]])
      assertGap(o.gaps[0], 300)
    }))

  it.scopedLive("an unknown tool name → an error result back to the model, nothing runs, the task goes on", () =>
    Effect.gen(function*() {
      const o = yield* run([Reply.toolCalls([{ id: "c1", name: "Frobnicate", args: {} }]), Reply.text("I see, no such tool.")])
      assert.strictEqual(o.code, 0, o.stderr)
      assert.deepStrictEqual(o.executions, ["c0"], `the tool before the fault ran once: ${o.c0}`)
      const result = o.events.find((e) => e.type === "tool_return" && e.tool_call_id === "c1")
      assert.deepStrictEqual(result?.type === "tool_return" && result.status, "error")
      assert.match(result?.type === "tool_return" ? result.content : "", /Frobnicate/)
      assert.strictEqual(o.requests.length, 2)
      assert.include(o.requests[1]!.body, "Frobnicate")
    }))

  it.scopedLive("malformed tool arguments → an error result, the tool does not run", () =>
    Effect.gen(function*() {
      const o = yield* run([Reply.toolCalls([{ id: "c1", name: "Bash", args: "{\"command\": \"echo c1 >> calls.log" }]), Reply.text("Let me fix that.")])
      assert.strictEqual(o.code, 0, o.stderr)
      const result = o.events.find((e) => e.type === "tool_return" && e.tool_call_id === "c1")
      assert.deepStrictEqual(result?.type === "tool_return" && result.status, "error")
      assert.deepStrictEqual(o.executions, ["c0"], "the malformed call did not run")
      assert.strictEqual(o.requests.length, 2)
    }))
})
