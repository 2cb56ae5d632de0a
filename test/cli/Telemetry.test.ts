import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cliDirs, runCli, startServe } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { ancestors, make as makeCollector, type Span } from "../support/OtlpCollector.js"

/**
 * OpenTelemetry from the built CLI (DESIGN "Usage, images, telemetry"): real `baton run` and
 * `baton serve` child processes export to a real OTLP/HTTP JSON receiver on loopback; the model is
 * the loopback mock. Span names, parent links, GenAI attributes, one trace across client and server,
 * no contents by default, and never a secret in anything exported.
 */

const API_KEY = "sk-mock-not-a-real-key"
const PROMPT = "what is in the file a.txt? zebra-prompt-marker"
const FILE_TEXT = "alpha-file-marker\n"
const COLLECTOR_SECRET = "collector-secret-4711"

const named = (spans: ReadonlyArray<Span>, name: string) => spans.filter((s) => s.name === name)
const one = (spans: ReadonlyArray<Span>, name: string): Span => {
  const found = named(spans, name)
  assert.strictEqual(found.length, 1, `one ${name} span, got ${found.length}: ${spans.map((s) => s.name).join(", ")}`)
  return found[0]!
}
/** The nearest ancestor among Baton's own spans (Effect.fn spans of the code in between are exported too). */
const batonParent = (spans: ReadonlyArray<Span>, span: Span) =>
  ancestors(spans, span).find((a) => a.name.startsWith("baton.") || a.name.startsWith("chat ") || a.name.startsWith("execute_tool "))

const printTree = (spans: ReadonlyArray<Span>) => {
  const walk = (parent: string | undefined, depth: number) => {
    for (const s of spans.filter((x) => x.parentSpanId === parent)) {
      process.stdout.write(`${"  ".repeat(depth)}${s.name} ${JSON.stringify(s.attributes).slice(0, 160)}\n`)
      walk(s.spanId, depth + 1)
    }
  }
  walk(undefined, 0)
}

const toolTask = (): ReadonlyArray<Reply> => [
  Reply.toolCalls([{ id: "call_1", name: "Read", args: { file_path: "a.txt" } }]),
  Reply.text("It says alpha.")
]

// The streams name a dated snapshot of the model asked for, as providers do.
const setup = (replies: ReadonlyArray<Reply> = toolTask()) => Effect.gen(function*() {
  const model = yield* MockModelServer.make({ replies, answeredBy: (requested) => `${requested}-2026-01-01` })
  const collector = yield* makeCollector
  const dirs = yield* cliDirs
  Fs.writeFileSync(Path.join(dirs.workspace, "a.txt"), FILE_TEXT)
  const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_HEADERS: `x-collector-key=${COLLECTOR_SECRET}` }
  return { model, collector, dirs, otel }
})

const assertNoSecrets = (bodies: ReadonlyArray<{ readonly body: string }>) => {
  const all = bodies.map((b) => b.body).join("\n")
  assert.notInclude(all, API_KEY, "the model API key")
  assert.notInclude(all, COLLECTOR_SECRET, "the collector's header value")
}

describe("OpenTelemetry (built CLI, loopback OTLP receiver)", () => {
  it.scopedLive("a tool task: baton.task → baton.run → chat mock-model, execute_tool Read; GenAI attributes; no contents by default", () =>
    Effect.gen(function*() {
      const { collector, dirs, model, otel } = yield* setup()
      const env = { ...model.childEnv("openai-chat"), BATON_HOME: dirs.home, ...otel }
      const result = yield* runCli(["run", "--json", "--approve", "allow", "-w", dirs.workspace, PROMPT], { env })
      assert.strictEqual(result.code, 0, result.stderr)
      // The exporter flushes as the command ends: everything is in before the process exits.
      const spans = collector.spans()
      if (process.env["BATON_TEST_PRINT_SPANS"] === "1") printTree(spans)
      const task = one(spans, "baton.task")
      const runs = named(spans, "baton.run")
      const chats = named(spans, "chat mock-model")
      const tool = one(spans, "execute_tool Read")
      assert.strictEqual(runs.length, 2, "two runs: the tool call, then the answer")
      assert.strictEqual(chats.length, 2)
      assert.isTrue(spans.every((s) => s.traceId === task.traceId), "one trace")
      assert.isTrue(spans.every((s) => s.service === "baton"), "OTEL_SERVICE_NAME defaults to baton")
      for (const run of runs) assert.strictEqual(batonParent(spans, run)?.spanId, task.spanId, "baton.run under baton.task")
      for (const chat of chats) assert.include(runs.map((r) => r.spanId), batonParent(spans, chat)?.spanId, "chat under baton.run")
      assert.strictEqual(batonParent(spans, tool)?.spanId, task.spanId, "execute_tool under baton.task")

      const conversation = task.attributes["baton.conversation_id"]
      assert.isString(conversation)
      for (const run of runs) {
        assert.strictEqual(run.attributes["baton.conversation_id"], conversation)
        assert.match(String(run.attributes["baton.run_id"]), /\S/)
      }
      const [first, second] = chats
      assert.deepInclude(first!.attributes, {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "mock-model",
        "gen_ai.response.model": "mock-model-2026-01-01",
        "gen_ai.response.finish_reasons": ["tool_calls"]
      })
      assert.isNumber(first!.attributes["gen_ai.usage.input_tokens"])
      assert.isNumber(first!.attributes["gen_ai.usage.output_tokens"])
      assert.deepStrictEqual(second!.attributes["gen_ai.response.finish_reasons"], ["stop"])
      assert.strictEqual(first!.kind, 3, "a client span")
      assert.deepInclude(tool.attributes, {
        "gen_ai.tool.name": "Read",
        "gen_ai.tool.call.id": "call_1",
        "baton.approval.decision": "allow",
        "baton.approval.source": "user",
        "baton.tool.status": "success"
      })
      const commits = named(spans, "baton.store.commit")
      assert.isAbove(commits.length, 0)
      assert.isTrue(commits.every((c) => typeof c.attributes["baton.store.rows"] === "number" && typeof c.attributes["baton.store.bytes"] === "number"))
      assert.isTrue(commits.every((c) => typeof c.attributes["baton.seq"] === "number"))

      // Contents stay home unless BATON_OTEL_CONTENT=1; secrets always do.
      const exported = collector.bodies().map((b) => b.body).join("\n")
      assert.notInclude(exported, "zebra-prompt-marker", "the prompt")
      assert.notInclude(exported, "alpha-file-marker", "the tool's result")
      assert.notInclude(exported, "It says alpha", "the model's answer")
      assertNoSecrets(collector.bodies())
      assert.isTrue(collector.bodies().every((b) => b.headers["x-collector-key"] === COLLECTOR_SECRET), "OTEL_EXPORTER_OTLP_HEADERS are sent")
    }))

  it.scopedLive("BATON_OTEL_CONTENT=1 exports the prompt, the answer and the tool's arguments and result; never a secret", () =>
    Effect.gen(function*() {
      const { collector, dirs, model, otel } = yield* setup()
      const env = { ...model.childEnv("openai-chat"), BATON_HOME: dirs.home, ...otel, BATON_OTEL_CONTENT: "1" }
      const result = yield* runCli(["run", "--json", "--approve", "allow", "-w", dirs.workspace, PROMPT], { env })
      assert.strictEqual(result.code, 0, result.stderr)
      const spans = collector.spans()
      const chats = named(spans, "chat mock-model")
      assert.include(String(chats[0]!.attributes["gen_ai.input.messages"]), "zebra-prompt-marker")
      assert.include(String(chats[1]!.attributes["gen_ai.output.messages"]), "It says alpha.")
      const tool = one(spans, "execute_tool Read")
      assert.include(String(tool.attributes["gen_ai.tool.call.arguments"]), "a.txt")
      assert.include(String(tool.attributes["gen_ai.tool.call.result"]), "alpha-file-marker")
      assertNoSecrets(collector.bodies())
    }))

  it.scopedLive("a retry is an event on baton.run (its delay and error tag); a run that fails sets the span's status", () =>
    Effect.gen(function*() {
      const { collector, dirs, model, otel } = yield* setup([Reply.status(503), Reply.text("Back again."), Reply.status(401)])
      const env = { ...model.childEnv("openai-chat"), BATON_HOME: dirs.home, ...otel }
      const retried = yield* runCli(["run", "--json", "-w", dirs.workspace, "hello"], { env })
      assert.strictEqual(retried.code, 0, retried.stderr)
      const run = one(collector.spans(), "baton.run")
      const retries = run.events.filter((e) => e.name === "baton.retry")
      assert.deepStrictEqual(retries.map((e) => [e.attributes["error.type"], e.attributes["baton.retry.delay_ms"], e.attributes["baton.retry.attempt"]]), [
        ["ProviderServerError", 250, 1]
      ])
      assert.strictEqual(run.status.code, 1, "the run recovered: OK")
      const [failedChat, okChat] = named(collector.spans(), "chat mock-model")
      assert.strictEqual(failedChat!.status.code, 2, "the attempt that got a 503 is a failed model request")
      assert.strictEqual(okChat!.status.code, 1)

      const refused = yield* runCli(["run", "--json", "--continue", "-w", dirs.workspace, "again"], { env })
      assert.strictEqual(refused.code, 3)
      const runs = named(collector.spans(), "baton.run")
      const failed = runs.at(-1)!
      assert.strictEqual(failed.status.code, 2, "a run that stopped with auth is an error")
      assert.strictEqual(failed.attributes["error.type"], "ProviderAuth")
      const tasks = named(collector.spans(), "baton.task")
      assert.deepStrictEqual(tasks.map((t) => t.status.code), [1, 2], "…and so is its task")
      assertNoSecrets(collector.bodies())
    }))

  it.scopedLive("OTEL_SDK_DISABLED=true: nothing is exported", () =>
    Effect.gen(function*() {
      const { collector, dirs, model, otel } = yield* setup()
      const env = { ...model.childEnv("openai-chat"), BATON_HOME: dirs.home, ...otel, OTEL_SDK_DISABLED: "true" }
      const result = yield* runCli(["run", "--json", "--approve", "allow", "-w", dirs.workspace, PROMPT], { env })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.deepStrictEqual(collector.bodies(), [])
    }))

  it.scopedLive("--server: the client's task and the server's run are one trace (traceparent); the server exports metrics", () =>
    Effect.gen(function*() {
      const { collector, dirs, model, otel } = yield* setup()
      const serverEnv = {
        ...model.childEnv("openai-chat"),
        ...otel,
        OTEL_SERVICE_NAME: "baton-server",
        OTEL_BSP_SCHEDULE_DELAY: "100",
        OTEL_METRIC_EXPORT_INTERVAL: "100",
        BATON_TOKEN: "server-token-secret-42"
      }
      const server = yield* startServe(["--home", Path.join(dirs.root, "server-home")], serverEnv)
      const client = { BATON_HOME: dirs.home, BATON_TOKEN: "server-token-secret-42", ...otel }
      const result = yield* runCli(["run", "--json", "--approve", "allow", "--server", server.url, "-w", dirs.workspace, PROMPT], { env: client })
      assert.strictEqual(result.code, 0, result.stderr)
      // The client flushed as it exited; the server exports every 100 ms.
      const spans = yield* collector.awaitSpans((all) =>
        all.filter((s) => s.service === "baton-server" && s.name === "baton.run").length === 2 &&
        all.filter((s) => s.service === "baton-server" && s.name.startsWith("chat ")).length === 2)
      const task = one(spans.filter((s) => s.service === "baton"), "baton.task")
      const serverSpans = spans.filter((s) => s.service === "baton-server")
      const serverRuns = named(serverSpans, "baton.run")
      assert.isTrue(serverRuns.every((r) => r.traceId === task.traceId), "the server's runs are in the client's trace")
      for (const run of serverRuns) assert.strictEqual(batonParent(spans, run)?.spanId, task.spanId, "…under the client's baton.task")
      const tool = one(spans, "execute_tool Read")
      assert.strictEqual(tool.service, "baton", "tools run on the client")
      assert.strictEqual(batonParent(spans, tool)?.spanId, task.spanId)
      // A request that carries no traceparent is a trace of its own, not a child of the server's lifetime.
      yield* Effect.promise(() => fetch(`${server.url}/healthz`).then((r) => r.text()))
      const health = yield* collector.awaitSpans((all) => all.some((s) => s.service === "baton-server" && s.attributes["url.path"] === "/healthz"))
      const probe = health.find((s) => s.service === "baton-server" && s.attributes["url.path"] === "/healthz")!
      assert.isUndefined(probe.parentSpanId)
      assert.strictEqual(probe.kind, 2, "a server span")

      const points = yield* collector.awaitMetrics((all) =>
        ["baton.runs.active", "baton.chunks.persisted", "gen_ai.client.operation.duration", "gen_ai.client.token.usage", "baton.tokens"].every((name) =>
          all.some((p) => p.name === name && p.service === "baton-server")) &&
        all.some((p) => p.name === "gen_ai.client.operation.duration" && (p.count ?? 0) >= 2))
      const last = (name: string, match: (p: (typeof points)[number]) => boolean = () => true) => points.filter((p) => p.name === name && match(p)).at(-1)
      assert.isAbove(last("baton.chunks.persisted")!.value, 0)
      assert.strictEqual(last("baton.runs.active")!.kind, "sum")
      const duration = last("gen_ai.client.operation.duration")!
      assert.deepInclude(duration.attributes, { "gen_ai.request.model": "mock-model", "gen_ai.provider.name": "openai", "gen_ai.operation.name": "chat" })
      assert.isAbove(last("baton.tokens", (p) => p.attributes["gen_ai.token.type"] === "input" && p.attributes["gen_ai.request.model"] === "mock-model")!.value, 0)
      assertNoSecrets(collector.bodies())
      assert.notInclude(collector.bodies().map((b) => b.body).join("\n"), "server-token-secret-42", "the server's bearer token")
      assert.notInclude(collector.bodies().map((b) => b.body).join("\n"), "zebra-prompt-marker")
    }))
})
