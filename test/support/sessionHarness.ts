import { assert } from "@effect/vitest"
import { Context, Deferred, Effect, Layer, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { TaskEvent } from "../../src/domain/Events.js"
import { Backend } from "../../src/services/Backend.js"
import { BatonServer, serve } from "../../src/programs/server/Server.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { layerRemote } from "../../src/services/backend/Remote.js"
import { Provider } from "../../src/services/Provider.js"
import { makeScripted, ProviderScript, type ScriptEntry } from "../../src/services/provider/Scripted.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { layerSqlite } from "../../src/services/store/Sqlite.js"
import type { Store } from "../../src/services/Store.js"
import { ToolExecutor } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor, type ToolExecutorOptions } from "../../src/services/tools/Executor.js"
import { pgStore } from "./pgDatabase.js"
import { tempDir } from "./tempDir.js"

/** Holds chosen model calls (1-based) until the test releases them: turns happen exactly when a test wants. */
export class Gates extends Context.Tag("test/Gates")<Gates, {
  readonly release: (call: number) => Effect.Effect<void>
  /** Resolves once gated call `call` has been made (and is held). */
  readonly reached: (call: number) => Effect.Effect<void>
}>() {}

export const layerScriptedGated = (script: ReadonlyArray<ScriptEntry>, gated: ReadonlyArray<number> = []) =>
  Layer.effectContext(Effect.gen(function*() {
    const { provider, script: handle } = yield* makeScripted(script)
    const gates = new Map<number, Deferred.Deferred<void>>()
    const arrivals = new Map<number, Deferred.Deferred<void>>()
    for (const n of gated) {
      gates.set(n, yield* Deferred.make<void>())
      arrivals.set(n, yield* Deferred.make<void>())
    }
    let calls = 0
    const gatedProvider = Provider.of({
      stream: (request) =>
        Stream.unwrap(Effect.suspend(() => {
          const call = ++calls
          const gate = gates.get(call)
          const inner = provider.stream(request)
          if (gate === undefined) return Effect.succeed(inner)
          return Effect.as(Deferred.succeed(arrivals.get(call)!, undefined), Stream.unwrap(Effect.as(Deferred.await(gate), inner)))
        }))
    })
    return Context.make(Provider, gatedProvider).pipe(
      Context.add(ProviderScript, handle),
      Context.add(Gates, {
        release: (n) => Effect.asVoid(Deferred.succeed(gates.get(n)!, undefined)),
        reached: (n) => Deferred.await(arrivals.get(n)!)
      })
    )
  }))

/** Where the conversation lives: in process over one of the stores, or behind `baton serve` over HTTP. */
export type StoreKind = "memory" | "sqlite" | "postgres" | "remote"

/** The store for one test: memory, a real SQLite file in `dir`, or a fresh schema of the test PostgreSQL. */
export const storeLayer = (kind: StoreKind, dir: string): Layer.Layer<Store, unknown> =>
  kind === "sqlite" ? layerSqlite({ filename: Path.join(dir, "baton.db") }) : kind === "postgres" ? pgStore : layerMemory

/** The Backend the Session talks to: the local one, or a remote client of a server (port 0) hosting it. */
export const backendLayer = (kind: StoreKind): Layer.Layer<Backend, unknown, Store | Provider> =>
  kind === "remote"
    ? Layer.unwrapEffect(Effect.map(BatonServer, (server) => layerRemote({ url: server.url }))).pipe(
      Layer.provide(serve({ port: 0, drainTimeoutMs: 1_000 })),
      Layer.provide(layerLocal())
    )
    : layerLocal()

/** A real temporary workspace, a real executor, the local backend over `kind`, the scripted (gated) model. */
export const sessionLayer = (
  kind: StoreKind,
  script: ReadonlyArray<ScriptEntry>,
  gated: ReadonlyArray<number> = [],
  tools?: ToolExecutorOptions["tools"]
) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const root = yield* tempDir
    const workspace = Path.join(root, "ws")
    Fs.mkdirSync(workspace)
    const executor = yield* makeToolExecutor({ workspace, ...(tools !== undefined ? { tools } : {}) })
    const model = layerScriptedGated(script, gated)
    return backendLayer(kind).pipe(
      Layer.provideMerge(model),
      Layer.provide(storeLayer(kind, root)),
      Layer.provideMerge(Layer.succeed(ToolExecutor, executor)),
      Layer.provideMerge(Layer.succeed(Workspace, { root, dir: workspace }))
    )
  }))

export class Workspace extends Context.Tag("test/Workspace")<Workspace, { readonly root: string; readonly dir: string }>() {}

export type SessionEnv = Backend | ProviderScript | Gates | ToolExecutor | Workspace

/**
 * The ordering guarantees of DESIGN.md a task stream must keep, whatever the interleaving:
 * approval before output, one result per call, usage right before request_end, deltas that add up.
 */
export const assertOrdering = (events: ReadonlyArray<TaskEvent>) => {
  const calls = events.flatMap((e, i) => (e.type === "tool_call" ? [{ id: e.tool_call_id, i }] : []))
  for (const call of calls) {
    const decisions = events.flatMap((e, i) => (e.type === "approval_decision" && e.tool_call_id === call.id ? [i] : []))
    const results = events.flatMap((e, i) => (e.type === "tool_return" && e.tool_call_id === call.id ? [i] : []))
    assert.strictEqual(results.length, 1, `one tool_return for ${call.id}`)
    assert.isTrue(decisions.length <= 1, `at most one decision for ${call.id}`)
    if (decisions[0] !== undefined) {
      assert.isTrue(decisions[0] > call.i && decisions[0] < results[0]!, `decision of ${call.id} between its call and its result`)
    }
  }
  events.forEach((e, i) => {
    if (e.type === "token_usage") assert.strictEqual(events[i + 1]?.type, "request_end", "request_end right after token_usage")
  })
  let text = ""
  for (const e of events) {
    if (e.type === "text_delta") text += e.content
    if (e.type === "assistant_message") {
      assert.strictEqual(e.content, text, "text deltas add up to the message")
      text = ""
    }
    if (e.type === "request_begin") text = ""
  }
}

export const byType = <T extends TaskEvent["type"]>(events: ReadonlyArray<TaskEvent>, type: T) =>
  events.filter((e): e is Extract<TaskEvent, { type: T }> => e.type === type)

export const nonDelta = (events: ReadonlyArray<TaskEvent>) => events.filter((e) => !e.type.endsWith("_delta")).map((e) => e.type)

export { Backend }
