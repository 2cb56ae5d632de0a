import { Context, Effect, Layer, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { ProviderRequest } from "../../src/domain/ProviderEvent.js"
import { Provider } from "../../src/services/Provider.js"
import { type Turn, turnStream } from "../../src/services/provider/Scripted.js"
import { ToolExecutor } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor, type ToolExecutorOptions } from "../../src/services/tools/Executor.js"
import { backendLayer, type StoreKind, storeLayer, Workspace } from "./sessionHarness.js"
import { tempDir } from "./tempDir.js"

/**
 * A model that answers each request from what it holds (whose conversation, how far it got), for
 * tests where several conversations call the model at once (a parent and its subagents), so no
 * order of calls can be scripted. `requests` records every request in arrival order.
 */
export interface RoutedModel {
  readonly requests: Array<ProviderRequest>
}

export class Routed extends Context.Tag("test/Routed")<Routed, RoutedModel>() {}

/** How many tool results the request's history holds: a conversation's step in a scripted exchange. */
export const step = (request: ProviderRequest) => request.history.filter((m) => m.type === "tool_return").length

/** The first user text of the request's history: which subagent (by its prompt) is asking. */
export const firstUserText = (request: ProviderRequest) => {
  const first = request.history.find((m) => m.type === "user_message")
  return first?.type === "user_message" ? first.content : ""
}

/**
 * The workspace, a real executor (the built-ins, or `tools`), the backend over `kind`, and the routed
 * model. With `root`, the store is a SQLite file in it (behind the server too, for "remote").
 */
export const routedLayer = (
  kind: StoreKind,
  route: (request: ProviderRequest) => Effect.Effect<Turn>,
  options?: { readonly tools?: ToolExecutorOptions["tools"]; readonly root?: string }
) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const root = options?.root ?? (yield* tempDir)
    const workspace = Path.join(root, "ws")
    Fs.mkdirSync(workspace, { recursive: true })
    const executor = yield* makeToolExecutor({ workspace, ...(options?.tools !== undefined ? { tools: options.tools } : {}) })
    const model: RoutedModel = { requests: [] }
    const provider = Provider.of({
      stream: (request) =>
        Stream.unwrap(Effect.suspend(() => {
          model.requests.push(request)
          return Effect.map(route(request), turnStream)
        }))
    })
    return backendLayer(kind).pipe(
      Layer.provideMerge(Layer.succeed(Provider, provider)),
      // A root given by the caller outlives this layer: a SQLite file there is what a second "process" finds.
      Layer.provide(storeLayer(options?.root !== undefined ? "sqlite" : kind, root)),
      Layer.provideMerge(Layer.succeed(ToolExecutor, executor)),
      Layer.provideMerge(Layer.succeed(Workspace, { root, dir: workspace })),
      Layer.merge(Layer.succeed(Routed, model))
    )
  }))
