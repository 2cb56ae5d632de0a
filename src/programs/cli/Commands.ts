import * as Effect from "effect/Effect"
import * as Fs from "node:fs"
import { backendLayer, modelFor, resolveEnv, storeEnv } from "./Env.js"
import type { CommonArgs } from "./CommonArgs.js"
import { layerFromSettings } from "../../services/provider/Config.js"
import { chat as chatProgram } from "./ChatCommand.js"
import { parseConversationId } from "./SelectConversation.js"
import { demo as demoProgram } from "./DemoCommand.js"
import { type Io, nodeIo } from "./Io.js"
import { recordedTask } from "./ReplayCommand.js"
import { runTask } from "./RunCommand.js"
import { type ServeCommandOptions, serve as serveProgram } from "./ServeCommand.js"
import { exportSession, listSessions, showSession } from "./SessionsCommand.js"

/**
 * The body of every `baton` command: resolve where it runs, pick the layers, call one program.
 * src/Cli.ts loads this module only once a command runs, so `baton --help` never pays for SQLite,
 * the providers or the tools.
 */

const readPrompt = (words: ReadonlyArray<string>) =>
  Effect.sync(() => (words.length === 1 && words[0] === "-" ? Fs.readFileSync(0, "utf8") : words.join(" ")))

export const run = (args: CommonArgs, options: { readonly json: boolean; readonly prompt: ReadonlyArray<string> }) =>
  Effect.gen(function*() {
    const io = nodeIo()
    const env = yield* resolveEnv(args, io.cwd())
    const model = yield* modelFor(env)
    yield* runTask(io, { env, prompt: [yield* readPrompt(options.prompt)], json: options.json, provider: model.layer })
  })

export const chat = (args: CommonArgs) =>
  Effect.gen(function*() {
    const io = nodeIo()
    const env = yield* resolveEnv(args, io.cwd())
    yield* chatProgram(io, env, yield* modelFor(env))
  })

export const replay = (args: CommonArgs, options: { readonly json: boolean; readonly cassette: string }) =>
  Effect.gen(function*() {
    const io = nodeIo()
    const env = yield* resolveEnv(args, io.cwd())
    const task = yield* recordedTask(options.cassette)
    yield* runTask(io, {
      env,
      prompt: task.prompt,
      json: options.json,
      provider: layerFromSettings({ kind: "replay", cassette: task.cassette }),
      settings: { system_prompt: task.system, ...(task.model !== undefined ? { model: task.model } : {}) },
      view: { prompts: true }
    })
  })

const withStore = <A, E, R>(args: CommonArgs, program: (io: Io) => Effect.Effect<A, E, R>) => {
  const io = nodeIo()
  return Effect.provide(program(io), backendLayer(storeEnv(args, io.cwd()), undefined))
}

export const sessionsList = (args: CommonArgs, options: { readonly json: boolean; readonly limit: number }) =>
  withStore(args, (io) => listSessions(io, options))

export const sessionsShow = (args: CommonArgs, options: { readonly json: boolean; readonly id: string }) =>
  Effect.flatMap(parseConversationId(options.id), (id) => withStore(args, (io) => showSession(io, id, options)))

export const sessionsExport = (args: CommonArgs, options: { readonly id: string; readonly out: string | undefined }) =>
  Effect.flatMap(parseConversationId(options.id), (id) => withStore(args, (io) => exportSession(io, id, options)))

export const demo = (options: { readonly fast: boolean }) => demoProgram(nodeIo(), options)

export const serve = (args: CommonArgs, options: ServeCommandOptions) => serveProgram(nodeIo(), args, options)
