/**
 * One `baton run` process against a loopback model, each figure against a floor measured in the
 * same run:
 * - `stream-5000`: `run --json` on a 30,000-character answer in 5,000 deltas, wall and CPU, against
 *   StreamFloor (the same request and SSE bytes, the same parser, the text to stdout); CPU per
 *   chunk as the marginal cost over the same command answered in one delta;
 * - `first-request`: process start to the model's receipt of the first request, against `node -e 0`;
 * - `tool-task`: read a file, then answer (two requests), wall and peak RSS.
 */
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { type Measured, measure, median, tempDir } from "./support/Child.js"
import * as LoopbackModel from "./support/LoopbackModel.js"
import * as OtlpSink from "./support/OtlpSink.js"
import { againstFloor, type Row } from "./support/Table.js"

const root = Path.join(import.meta.dirname, "..")
const bin = process.env["BENCH_BIN"] ?? Path.join(root, "dist", "bin", "baton.js")
const floorScript = Path.join(root, "dist", "bench", "StreamFloor.mjs")

const DELTAS = 5_000
const CHARS = 30_000
const perDelta = CHARS / DELTAS
const manyDeltas = Array.from({ length: DELTAS }, (_, i) => String(i).padStart(perDelta - 1, "0") + " ")
const oneDelta = [manyDeltas.join("")]

interface Model {
  readonly model: LoopbackModel.LoopbackModel
  /** `performance.now()` of every request received, in order. */
  readonly requests: Array<number>
}

export const loopback = (options: Omit<LoopbackModel.LoopbackOptions, "wire" | "onRequest">) =>
  Effect.acquireRelease(
    Effect.promise(async (): Promise<Model> => {
      const requests: Array<number> = []
      const model = await LoopbackModel.start({ wire: "openai-chat", ...options, onRequest: (at) => requests.push(at) })
      return { model, requests }
    }),
    ({ model }) => Effect.promise(model.close)
  )

/** `baton run` in a fresh home and workspace; fails unless it exits 0 having printed the whole answer. */
export const batonRun = (model: Model, args: ReadonlyArray<string>, workspace?: string, extraEnv: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const home = tempDir("home")
    const cwd = workspace ?? tempDir("ws")
    const before = model.requests.length
    const run = await measure([bin, "run", ...args, "-w", cwd, "hi"], {
      env: { BATON_HOME: home, BATON_PROVIDER: "openai-chat", BATON_MODEL: "bench", BATON_BASE_URL: model.model.baseUrl, ...extraEnv },
      keepStdout: true
    })
    Fs.rmSync(home, { recursive: true, force: true })
    if (workspace === undefined) Fs.rmSync(cwd, { recursive: true, force: true })
    if (run.code !== 0) throw new Error(`baton run exited ${run.code}: ${run.stderr.slice(0, 2000)}`)
    const firstRequest = model.requests[before]
    return { run, firstRequestMs: firstRequest === undefined ? Number.NaN : firstRequest - run.startedAt }
  })

export const times = <A, E, R>(n: number, effect: Effect.Effect<A, E, R>) => Effect.forEach(Array.from({ length: n }), () => effect)

const medianOf = (runs: ReadonlyArray<Measured>, f: (m: Measured) => number) => median(runs.map(f))

export const streamRows = Effect.gen(function*() {
  const many = yield* loopback({ deltas: manyDeltas })
  const one = yield* loopback({ deltas: oneDelta })

  // Warm the page cache and the model, then measure.
  yield* batonRun(one, ["--json"])
  const streamed = yield* times(3, batonRun(many, ["--json"]))
  const answeredOnce = yield* times(5, batonRun(one, ["--json"]))
  const lines = streamed[0]!.run.stdout.split("\n").filter((l) => l.includes("\"text_delta\"")).length
  if (lines !== DELTAS) return yield* Effect.dieMessage(`stream-5000 printed ${lines} text_delta lines, expected ${DELTAS}`)

  const floorRun = Effect.promise(() => measure([floorScript, many.model.baseUrl, "bench"], { keepStdout: true }))
  yield* floorRun
  const floors = yield* times(5, floorRun)
  if (floors[0]!.stdout.trim() !== manyDeltas.join("").trim()) return yield* Effect.dieMessage("the floor did not print the answer")
  const nodeFloor = yield* times(7, Effect.promise(() => measure(["-e", "0"])))

  const wall = medianOf(streamed.map((s) => s.run), (m) => m.wallMs)
  const cpu = medianOf(streamed.map((s) => s.run), (m) => m.cpuMs)
  const cpuOnce = medianOf(answeredOnce.map((s) => s.run), (m) => m.cpuMs)
  const floorWall = medianOf(floors, (m) => m.wallMs)
  const floorCpu = medianOf(floors, (m) => m.cpuMs)
  const marginalUs = ((cpu - cpuOnce) * 1000) / DELTAS
  const first = median(answeredOnce.map((s) => s.firstRequestMs))
  const nodeWall = medianOf(nodeFloor, (m) => m.wallMs)

  // The same with every span exported (OTEL_EXPORTER_OTLP_ENDPOINT set): what tracing costs per chunk.
  const sink = yield* Effect.acquireRelease(Effect.promise(OtlpSink.start), (s) => Effect.promise(s.close))
  const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url }
  const tracedMany = yield* times(3, batonRun(many, ["--json"], undefined, otel))
  const tracedOnce = yield* times(3, batonRun(one, ["--json"], undefined, otel))
  const tracedCpu = medianOf(tracedMany.map((s) => s.run), (m) => m.cpuMs)
  const tracedMarginalUs = ((tracedCpu - medianOf(tracedOnce.map((s) => s.run), (m) => m.cpuMs)) * 1000) / DELTAS
  if (sink.bytes() === 0) return yield* Effect.dieMessage("nothing was exported with OTEL_EXPORTER_OTLP_ENDPOINT set")

  // The tool task: the model asks to read a file, then answers.
  const tool = yield* loopback({ deltas: ["The file says hello."], toolCall: { name: "Read", arguments: JSON.stringify({ file_path: "notes.txt" }) } })
  const workspace = tempDir("tool-ws")
  Fs.writeFileSync(Path.join(workspace, "notes.txt"), "hello\n".repeat(50))
  yield* batonRun(tool, ["--json", "--approve", "allow"], workspace)
  const tasks = yield* times(3, batonRun(tool, ["--json", "--approve", "allow"], workspace))
  Fs.rmSync(workspace, { recursive: true, force: true })
  if (!tasks[0]!.run.stdout.includes("\"tool_return\"")) return yield* Effect.dieMessage("the tool task ran no tool")

  const rows: ReadonlyArray<Row> = [
    againstFloor("stream-5000 wall (`run --json`, 5,000 deltas)", wall, "ms", { value: floorWall, label: "bare Node client" }, 2),
    { figure: "stream-5000 CPU (user+sys)", value: cpu, unit: "ms", floor: { value: floorCpu, label: "bare Node client" } },
    { figure: "stream-5000 same command, 1 delta: CPU", value: cpuOnce, unit: "ms" },
    {
      figure: "stream-5000 CPU per chunk (marginal)",
      value: marginalUs,
      unit: "µs",
      target: "≤ 60 µs",
      met: marginalUs <= 60,
      note: "(CPU 5,000 deltas − CPU 1 delta) ÷ 5,000"
    },
    {
      figure: "stream-5000 CPU per chunk (marginal), spans exported over OTLP",
      value: tracedMarginalUs,
      unit: "µs",
      floor: { value: marginalUs, label: "no OTEL variable" },
      note: "OTEL_EXPORTER_OTLP_ENDPOINT to a loopback receiver: one commit span a chunk"
    },
    { figure: "stream-5000 peak RSS", value: medianOf(streamed.map((s) => s.run), (m) => m.maxRssMb), unit: "MB" },
    againstFloor("first-request (start → model receives request)", first, "ms", { value: nodeWall, label: "node -e 0" }, 2.5),
    { figure: "tool-task wall (Read, then answer; 2 requests)", value: medianOf(tasks.map((s) => s.run), (m) => m.wallMs), unit: "ms" },
    { figure: "tool-task start → first request", value: median(tasks.map((s) => s.firstRequestMs)), unit: "ms", floor: { value: nodeWall, label: "node -e 0" } },
    {
      figure: "tool-task peak RSS",
      value: medianOf(tasks.map((s) => s.run), (m) => m.maxRssMb),
      unit: "MB",
      target: "≤ 120 MB",
      met: medianOf(tasks.map((s) => s.run), (m) => m.maxRssMb) <= 120
    }
  ]
  return rows
}).pipe(Effect.scoped)
