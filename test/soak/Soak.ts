import { Effect, Option, Random, Schema, type Scope } from "effect"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { type TaskEvent, TaskEventFromJson } from "../../src/domain/Events.js"
import { ConversationId } from "../../src/domain/Ids.js"
import { Store } from "../../src/services/Store.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { type Child, scopedChild } from "./Children.js"
import { bashExecutions, executionViolations, leftoverProcesses, pairingInRequests, storeFacts, watchWrites } from "./Invariants.js"
import { FINAL_ANSWER, messagesOf, soakResponder } from "./SoakModel.js"

/**
 * The kill -9 matrix: a 3-tool task against the loopback mock, the process that holds the
 * conversation (`baton run`, or `baton serve` behind a `--server` client) killed with SIGKILL at a
 * moment of the task, then the task continued, and every invariant checked.
 */

export type Phase = "streaming" | "approval" | "tool" | "after_finish" | "compaction" | "random"
export const PHASES: ReadonlyArray<Phase> = ["streaming", "approval", "tool", "after_finish", "compaction", "random"]
export type Mode = "local" | "server"

/**
 * Where the task stood when the kill landed, as the client's output last showed it: a model request
 * streaming, an approval asked, a tool running (the batch's earlier results finished and unsent),
 * every result of the batch finished but the next run not begun, a compaction, elsewhere, or done.
 */
export type Hit = "streaming" | "approval" | "tool_running" | "after_finish" | "compaction" | "between" | "finished"

export interface IterationResult {
  readonly mode: Mode
  readonly target: Phase
  readonly hit: Hit
  readonly violations: ReadonlyArray<string>
  readonly requests: number
  /** The most times one Bash call appended (a re-run of a call that never committed counts). */
  readonly bashRuns: number
  readonly durationMs: number
}

export interface SoakOptions {
  readonly eventDelayMs: number
  readonly bashMs: number
}

const decodeEvent = Schema.decodeUnknownOption(TaskEventFromJson)

/** The task events in a client's output (in a pty, stdout and stderr are one stream). */
export const eventsOf = (lines: ReadonlyArray<string>): ReadonlyArray<TaskEvent> =>
  lines.flatMap((line) => {
    const start = line.indexOf("{\"type\":")
    return start < 0 ? [] : Option.toArray(decodeEvent(line.slice(start)))
  })

/** What the output shows the task doing at its end (compaction > approval > streaming > tools > results). */
export const classify = (lines: ReadonlyArray<string>): Hit => {
  let compacting = false
  let inRequest = false
  let allowed = new Set<string>()
  let returned = new Set<string>()
  let finished = false
  for (const e of eventsOf(lines)) {
    if (e.type === "compaction_begin") compacting = true
    if (e.type === "compaction_end") compacting = false
    if (e.type === "request_begin") {
      inRequest = true
      if (e.purpose !== "compaction") {
        allowed = new Set()
        returned = new Set()
      }
    }
    if (e.type === "request_end") inRequest = false
    if (e.type === "approval_decision" && e.decision !== "deny") allowed.add(e.tool_call_id)
    if (e.type === "tool_return") returned.add(e.tool_call_id)
    if (e.type === "stop_reason") finished = e.reason === "end_turn"
  }
  const prompt = lines.some((line) => line.includes("answer (y/a/n)"))
  if (compacting) return "compaction"
  if (prompt) return "approval"
  if (inRequest) return "streaming"
  if (finished) return "finished"
  if ([...allowed].some((id) => !returned.has(id))) return "tool_running"
  if (returned.size > 0) return "after_finish"
  return "between"
}

/** The line that marks the moment to aim at, and how far past it the kill may land (ms). */
const trigger = (phase: Phase, options: SoakOptions): { readonly test: (line: string) => boolean; readonly spreadMs: number } => {
  const is = (type: string) => (line: string) => line.includes(`{"type":"${type}"`)
  switch (phase) {
    case "streaming":
      return { test: is("text_delta"), spreadMs: options.eventDelayMs * 3 }
    case "approval":
      return { test: (line) => line.includes("answer (y/a/n)"), spreadMs: options.eventDelayMs * 10 }
    case "tool":
      return { test: (line) => is("approval_decision")(line) && line.includes("\"b-"), spreadMs: options.bashMs * 0.7 }
    case "after_finish":
      // The Edit finishes last: from its result to the next run's first chunk, every result is unsent.
      return { test: (line) => is("tool_return")(line) && line.includes("\"e-"), spreadMs: 12 }
    case "compaction":
      return { test: is("compaction_begin"), spreadMs: options.eventDelayMs * 3 }
    case "random":
      return { test: is("user_message"), spreadMs: options.eventDelayMs * 40 + options.bashMs * 2 }
  }
}

const freePort = Effect.async<number>((resume) => {
  const server = Http.createServer()
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})

const dirs = Effect.acquireRelease(
  Effect.sync(() => {
    const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-soak-"))
    const made = { root, home: Path.join(root, "home"), serverHome: Path.join(root, "server"), workspace: Path.join(root, "ws") }
    for (const dir of [made.home, made.serverHome, made.workspace]) Fs.mkdirSync(dir)
    // The tool turn reports more tokens than this, so the run after it compacts first.
    const settings = JSON.stringify({ compaction: { maxContextLength: 4000 } })
    Fs.writeFileSync(Path.join(made.home, "settings.json"), settings)
    Fs.writeFileSync(Path.join(made.serverHome, "settings.json"), settings)
    return { ...made, workspace: Fs.realpathSync(made.workspace) }
  }),
  (d) => Effect.sync(() => Fs.rmSync(d.root, { recursive: true, force: true }))
)

const within = <A, E, R>(what: string, ms: number, effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.timeoutOption(effect, ms), (found) =>
    Option.isSome(found) ? Effect.succeed(found.value) : Effect.dieMessage(`soak: ${what} did not happen within ${ms} ms`))

/** `baton serve` on a fixed port over `home`, up once it says where it listens. */
const startServer = (home: string, port: number, env: Record<string, string>) =>
  Effect.gen(function*() {
    const server = yield* scopedChild(["serve", "--port", String(port), "--home", home], { env })
    const up = yield* within("the server start", 20_000, server.waitLine((line) => line.startsWith("baton serve:")))
    if (Option.isNone(up)) return yield* Effect.dieMessage(`soak: the server did not start: ${server.lines().join("\n")}`)
    return server
  })

/** One iteration: start the task, kill at `target`, continue it, check everything. */
export const iteration = (mode: Mode, target: Phase, options: SoakOptions): Effect.Effect<IterationResult, never, Scope.Scope> =>
  Effect.scoped(Effect.gen(function*() {
    const started = Date.now()
    const d = yield* dirs
    const mock = yield* MockModelServer.make({ respond: soakResponder({ ...options, bigUsage: 5000 }) })
    const env = mock.childEnv("openai-chat")
    const writes = yield* watchWrites(d.workspace)
    const port = yield* freePort
    const url = `http://127.0.0.1:${port}`
    let server: Child | undefined = mode === "server" ? yield* startServer(d.serverHome, port, env) : undefined
    const common = ["--home", d.home, "-w", d.workspace, "--json", ...(mode === "server" ? ["--server", url] : [])]
    const approve = target === "approval" ? "ask" : "allow"
    const first = yield* scopedChild(["run", ...common, "--approve", approve, "do the task"], { env, pty: target === "approval" })
    const aim = trigger(target, options)
    const seen = yield* within("the kill moment", 30_000, first.waitLine(aim.test))
    let hit: Hit = "finished"
    if (Option.isSome(seen)) {
      yield* Effect.sleep(yield* Random.nextIntBetween(0, Math.max(1, Math.round(aim.spreadMs))))
      const victim = mode === "server" ? server! : first
      hit = classify(first.lines())
      yield* victim.kill("SIGKILL")
      yield* within("the killed process to exit", 10_000, victim.exited)
      if (mode === "server") server = yield* startServer(d.serverHome, port, env)
    }
    // The server's client is still running: it rides out the restart, or ends and is continued. One that
    // waits for an approval gets its answers, as the person at the terminal would give them.
    if (mode === "server" && target === "approval") yield* Effect.forkScoped(answerPrompts(first))
    const firstExit = yield* within("the first client to exit", 60_000, first.exited).pipe(
      Effect.catchAllDefect((defect) => Effect.dieMessage(`${String(defect)}; its last lines: ${first.lines().slice(-12).join(" ⏎ ")}`))
    )
    const pids = [first.pid()].filter((p): p is number => p !== undefined)
    // What the first process showed: its prompt is acknowledged once its run began there.
    const shownFirst = eventsOf(first.lines())
    let printed = shownFirst
    const done = firstExit.code === 0 && printed.some((e) => e.type === "assistant_message" && e.content === FINAL_ANSWER)
    const violations: Array<string> = []
    if (!done) {
      const again = yield* scopedChild(["run", ...common, "--continue", "--approve", "allow", "continue"], { env })
      const exit = yield* within("the continued task", 60_000, again.exited)
      pids.push(...[again.pid()].filter((p): p is number => p !== undefined))
      const events = eventsOf(again.lines())
      printed = [...printed, ...events]
      if (exit.code !== 0) violations.push(`the continued task exited ${exit.code}: ${again.lines().slice(-5).join(" | ")}`)
      if (!events.some((e) => e.type === "assistant_message" && e.content === FINAL_ANSWER)) violations.push("the continued task did not finish the task")
    }
    yield* writes.settle
    const requests = yield* mock.requests
    if (process.env["SOAK_DUMP"] !== undefined && requests.length > 8) {
      const shape = (r: (typeof requests)[number]) =>
        messagesOf(r).map((m) => (m.role === "tool" ? `T:${m.tool_call_id}` : m.role === "assistant" ? `A(${(m.tool_calls ?? []).map((c) => c.id).join(",")})` : `${m.role[0]}:${String(m.content).slice(0, 25)}`)).join(" ")
      console.log(requests.map((r) => `#${r.index} ${shape(r)}`).join("\n"), "\nFIRST:", first.lines().filter((l) => !l.includes("_delta")).map((l) => l.slice(0, 140)).join("\n"))
    }
    violations.push(...pairingInRequests(requests))
    if (server !== undefined) {
      yield* server.kill("SIGTERM")
      yield* within("the server to stop", 15_000, server.exited)
    }
    const store = layerSqlite({ filename: Path.join(mode === "server" ? d.serverHome : d.home, "baton.db") })
    const id = yield* Effect.flatMap(listConversation(store), (found) =>
      found === undefined ? Effect.dieMessage("soak: no conversation was created") : Effect.succeed(found))
    const facts = yield* storeFacts(id, printed).pipe(Effect.provide(store), Effect.orDie)
    violations.push(...facts.violations)
    if (!facts.answered) violations.push("the final answer is not in the conversation")
    // Only the first process's run can acknowledge "do the task": the continued task's runs begin after
    // "continue", so a kill before the prompt's commit (nothing acknowledged) is no loss.
    if (shownFirst.some((e) => e.type === "request_begin") && !facts.prompts.includes("do the task")) violations.push("the acknowledged prompt was lost")
    const bash = bashExecutions(d.workspace)
    violations.push(...executionViolations({ bash, files: writes.renames }, facts.committed))
    const left = leftoverProcesses(pids)
    if (left.length > 0) violations.push(`process(es) left running: ${left.join(",")}`)
    const records = Fs.existsSync(Path.join(d.home, "processes")) ? Fs.readdirSync(Path.join(d.home, "processes")) : []
    if (records.length > 0) violations.push(`process records left: ${records.join(",")}`)
    return {
      mode,
      target,
      hit,
      violations,
      requests: requests.length,
      bashRuns: Math.max(0, ...[...bash.values()].map((p) => p.length)),
      durationMs: Date.now() - started
    } satisfies IterationResult
  })).pipe(Effect.catchAllDefect((defect) =>
    Effect.succeed({ mode, target, hit: "between" as const, violations: [`harness: ${String(defect)}`], requests: 0, bashRuns: 0, durationMs: 0 })))

/** Answers each approval question as it is asked, until the process ends. */
const answerPrompts = (child: Child): Effect.Effect<void> =>
  Effect.gen(function*() {
    let answered = 0
    while (true) {
      const next = yield* child.waitLine(() => child.prompts() > answered)
      if (Option.isNone(next)) return
      answered = child.prompts()
      yield* child.type("y\r")
    }
  })

/** The one conversation of the iteration's store. */
const listConversation = (store: ReturnType<typeof layerSqlite>) =>
  Effect.flatMap(Store, (s) => s.listConversations({ limit: 2 })).pipe(
    Effect.provide(store),
    Effect.orDie,
    Effect.map((page) => (page.items[0] === undefined ? undefined : ConversationId.make(page.items[0].id)))
  )

export interface Summary {
  readonly iterations: number
  readonly byTarget: Readonly<Record<string, number>>
  readonly byHit: Readonly<Record<string, number>>
  readonly violations: ReadonlyArray<string>
  readonly reRuns: number
  readonly meanMs: number
}

export const summarize = (results: ReadonlyArray<IterationResult>): Summary => {
  const count = (key: (r: IterationResult) => string) =>
    results.reduce<Record<string, number>>((acc, r) => ({ ...acc, [key(r)]: (acc[key(r)] ?? 0) + 1 }), {})
  return {
    iterations: results.length,
    byTarget: count((r) => r.target),
    byHit: count((r) => r.hit),
    violations: results.flatMap((r, i) => r.violations.map((v) => `#${i + 1} ${r.mode}/${r.target}: ${v}`)),
    reRuns: results.filter((r) => r.bashRuns > 1).length,
    meanMs: Math.round(results.reduce((s, r) => s + r.durationMs, 0) / Math.max(1, results.length))
  }
}

/** `n` iterations, the phases in turn, one at a time (the kill timing needs the machine's attention). */
export const matrix = (mode: Mode, n: number, options: SoakOptions, onResult: (r: IterationResult, i: number) => Effect.Effect<void> = () => Effect.void) =>
  Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) =>
    Effect.tap(Effect.scoped(iteration(mode, PHASES[i % PHASES.length]!, options)), (r) => onResult(r, i)))

/** The phase that aims a kill at `hit`. */
const phaseOf = (hit: Hit): Phase | undefined =>
  hit === "tool_running" ? "tool" : PHASES.find((phase) => phase === hit)

/**
 * The matrix, then again for each of `required` that no kill landed in (a loaded machine can move a
 * kill into the next phase), up to `retries` more aimed kills each: every result is kept and checked,
 * so a retry only adds evidence.
 */
export const matrixCovering = (mode: Mode, n: number, options: SoakOptions, required: ReadonlyArray<Hit>, retries = 3) =>
  Effect.gen(function*() {
    const results = [...yield* matrix(mode, n, options)]
    for (const hit of required) {
      const phase = phaseOf(hit)
      for (let i = 0; phase !== undefined && i < retries && !results.some((r) => r.hit === hit); i++) {
        results.push(yield* Effect.scoped(iteration(mode, phase, options)))
      }
    }
    return results
  })

