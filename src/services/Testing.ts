import type * as FileSystem from "@effect/platform/FileSystem"
import type * as Layer from "effect/Layer"
import type { ConfigError } from "../domain/Errors.js"
import type { Provider } from "./Provider.js"
import * as Cassette from "./provider/Cassette.js"
import * as Scripted from "./provider/Scripted.js"
import type { Store } from "./Store.js"
import * as Memory from "./store/Memory.js"

/**
 * `baton/testing`: the deterministic Layers Baton's own tests run on, for your programs' tests. Each
 * replaces one real Layer (the model, or the Store) and keeps everything else real; compose them as
 * you would the live ones:
 *
 *   const TestBaton = layerLocal().pipe(Layer.provide([scriptedModel([Turn.text("done")]), memoryStore]))
 */

/** Builds scripted turns: `Turn.text("…")`, `Turn.toolCalls([{ id, name, args }])`, `Turn.fail(error)`, `Turn.stall()`. */
export const Turn = Scripted.Turn
export type Turn = Scripted.Turn
export type ScriptEntry = Scripted.ScriptEntry

/** The handle of a scripted model: the requests it received, `awaitRequests(n)`, `push(...turns)`. */
export const ProviderScript = Scripted.ProviderScript

/**
 * A model that answers each call with the next scripted turn (a function entry chooses from the
 * request). Requires nothing; provides `Provider` and its `ProviderScript` handle. Running out of
 * script is a defect naming the request, so an unplanned model call fails the test.
 */
export const scriptedModel = (script: ReadonlyArray<ScriptEntry>): Layer.Layer<Provider | Scripted.ProviderScript> =>
  Scripted.layerScripted(script)

/**
 * Records every call of the Provider under it to a JSON Lines cassette at `path` (request hash, the
 * events, the error if any), appending as each call ends. Requires the `Provider` to record (e.g.
 * `layerConfig`) and a `FileSystem` (`NodeFileSystem.layer`); provides `Provider`.
 */
export const cassetteRecorder = (path: string): Layer.Layer<Provider, never, Provider | FileSystem.FileSystem> =>
  Cassette.layerRecord(path)

/**
 * Answers each call with the recording of the same request from the cassette at `path` (matched by
 * content, so a changed prompt or tool is a `ProviderReplayMiss`). No network. Requires a
 * `FileSystem` (`NodeFileSystem.layer`); provides `Provider`; a missing or corrupt file fails the
 * Layer with a `ConfigError`.
 */
export const cassetteReplayer = (path: string): Layer.Layer<Provider, ConfigError, FileSystem.FileSystem> =>
  Cassette.layerReplay(path)

/**
 * The Store in memory: the same contract as SQLite and PostgreSQL (the same JSON per item), gone
 * when the Layer's scope closes. Requires nothing; provides `Store` (give it to `layerLocal()`).
 */
export const memoryStore: Layer.Layer<Store> = Memory.layerMemory
