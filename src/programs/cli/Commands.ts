import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { ConfigError } from "../../domain/Errors.js"
import { parseSinceDate } from "../../domain/Usage.js"
import type { RemoteWait } from "../../services/backend/Remote.js"
import type { Provider } from "../../services/Provider.js"
import { type CommonArgs, noCommonArgs } from "./CommonArgs.js"
import { type AppEnv, conversationSettings, freshEnv, maxTurns, providerSettings, resolveEnv, serverToken, storeEnv, storeLabel } from "./Env.js"
import { type Io, nodeIo } from "./Io.js"
import * as Layers from "./Layers.js"
import * as ServeConfig from "./ServeConfig.js"
import { readImage } from "./Images.js"
import { listMcpServers } from "./McpCommand.js"
import { recordedTask } from "./ReplayCommand.js"
import { runTask } from "./RunCommand.js"
import { parseConversationId } from "./SelectConversation.js"
import type { ServeCommandOptions } from "./ServeCommand.js"
import { exportSession, forkSession, listSessions, showSession } from "./SessionsCommand.js"
import type { WebCommandOptions } from "./WebCommand.js"
import { showUsage } from "./UsageCommand.js"

/**
 * The body of every `baton` command: resolve where it runs, provide its layers from Layers.ts, run
 * its program. programs/cli holds the command line's side of Baton: the command programs
 * (*Command.ts, each naming the services it needs in its type), this entry and the composition root
 * (Env.ts resolves where a command runs, Layers.ts turns that into layers), the approvers (approvers/:
 * who answers a call the rules leave open) and the terminal views (view/: task events as a person
 * reads them). src/Cli.ts loads this module only once a command runs, so `baton --help` never pays
 * for SQLite, the providers or the tools; the interactive views (chat, demo) and the server load
 * only for their own command, so `baton run` does not pay for them either.
 */

/** A command with the telemetry the environment asks for around it, so its own span is exported too. */
export const withTelemetry = <A, E, R>(command: Effect.Effect<A, E, R>, options: { readonly metrics: boolean }) =>
  Effect.provide(command, Layers.telemetry(options))

const chatCommand = Effect.promise(() => import("./ChatCommand.js"))
const demoCommand = Effect.promise(() => import("./DemoCommand.js"))
const serveCommand = Effect.promise(() => import("./ServeCommand.js"))
const webCommand = Effect.promise(() => import("./WebCommand.js"))

/**
 * The prompt from its words, or stdin for `-`. A word that looks like an option is refused: the
 * parser hands unknown options to the prompt, and a mistyped flag must not become a task.
 */
const readPrompt = (words: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const option = words.find((w) => /^--[A-Za-z]/.test(w))
    if (option !== undefined) {
      return yield* new ConfigError({
        source: "command line",
        field: option,
        message: `unknown option ${option} for \`baton run\`; see \`baton run --help\` (a prompt that starts with a dash can be given on stdin with \`-\`)`
      })
    }
    return words.length === 1 && words[0] === "-" ? Fs.readFileSync(0, "utf8") : words.join(" ")
  })

export const run = Effect.fn("Commands.run")(function*(
  args: CommonArgs,
  options: { readonly json: boolean; readonly prompt: ReadonlyArray<string>; readonly images?: ReadonlyArray<string> }
) {
  const io = nodeIo()
  const resuming = options.prompt.length === 0
  if (resuming && !args.continue && args.conversation === undefined) {
    return yield* new ConfigError({
      source: "command line",
      field: "prompt",
      message: "a prompt is needed (without one, `baton run --continue` or `--conversation ID` resumes the calls left waiting)"
    })
  }
  const prompt = resuming ? [] : [yield* readPrompt(options.prompt)]
  const images = yield* Effect.forEach(options.images ?? [], (file) => readImage(file, io.cwd()))
  const env = yield* resolveEnv(args, io.cwd())
  const model = yield* Layers.model(env)
  yield* runTask(io, { env, prompt, json: options.json, images }).pipe(Effect.scoped, Effect.provide(Layers.task(env, model.layer, serverWait(io))))
})

export const chat = Effect.fn("Commands.chat")(function*(args: CommonArgs) {
  const io = nodeIo()
  const env = yield* resolveEnv(args, io.cwd())
  const model = yield* Layers.model(env)
  const { chat: chatProgram } = yield* chatCommand
  yield* chatProgram(io, env, model.describe, model.credentials).pipe(Effect.scoped, Effect.provide(Layers.task(env, model.layer, serverWait(io))))
})

/** A `--server` call waiting for a server that restarts: said on stderr, with the time to the next try. */
const serverWait = (io: Io) => (wait: RemoteWait) =>
  Effect.sync(() => io.err(`baton: waiting for the server: ${wait.message} (trying again in ${(wait.retryInMs / 1000).toFixed(1)} s)\n`))

export const replay = Effect.fn("Commands.replay")(function*(args: CommonArgs, options: { readonly json: boolean; readonly cassette: string }) {
  const io = nodeIo()
  const env = yield* resolveEnv(args, io.cwd())
  const task = yield* recordedTask(options.cassette)
  yield* runTask(io, {
    env,
    prompt: task.prompt,
    json: options.json,
    settings: { system_prompt: task.system, ...(task.model !== undefined ? { model: task.model } : {}) },
    subagents: task.subagents,
    view: { prompts: true }
  }).pipe(Effect.scoped, Effect.provide(Layers.task(env, Layers.replay(task.cassette))))
})

/** `model` replaces the bundled cassette (scripts/record-demo.ts passes a recorder). */
export const demo = Effect.fn("Commands.demo")(function*(options: { readonly fast: boolean }, model?: Layer.Layer<Provider, ConfigError>) {
  const io = nodeIo()
  const { demo: demoProgram, demoAssets, prepareDemo } = yield* demoCommand
  const assets = yield* demoAssets()
  const dirs = yield* prepareDemo(assets)
  const provider = model ?? Layers.demoModel(Path.join(assets, "cassette.jsonl"), { fast: options.fast || !io.stdoutTTY })
  // The bundled cassette was recorded with the sandbox off: a sandboxed Bash is another tool definition, which it would not match.
  const args = { ...noCommonArgs, sandbox: "off" as const }
  yield* demoProgram(io, dirs).pipe(Effect.provide(Layers.task(freshEnv(dirs, args), provider)))
})

export const serve = Effect.fn("Commands.serve")(function*(args: CommonArgs, options: ServeCommandOptions) {
  const io = nodeIo()
  const env = yield* resolveEnv({ ...args, server: undefined }, io.cwd())
  // The cluster flags first: a runner without its database is wrong whatever the model.
  const runner = yield* ServeConfig.runner(env, options)
  const local = yield* ServeConfig.passivation(options)
  const model = yield* Layers.model(env)
  const token = options.token ?? (yield* serverToken)
  const serveOptions = {
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(token !== undefined ? { token } : {})
  }
  const server = runner === undefined
    ? Layers.server(env, model.layer, serveOptions, local)
    : Layers.clusterServer(env, model.layer, serveOptions, runner)
  const { serve: serveProgram } = yield* serveCommand
  return yield* serveProgram(io, {
    model: model.describe,
    store: storeLabel(env),
    token: token !== undefined,
    ...(runner !== undefined ? { runner: `${runner.host}:${runner.port}` } : {})
  }).pipe(Effect.provide(server))
})

/** Names the credentials the model calls use, for the page's auth lock (where the key came from, never the key). */
const credentialsLabel = (env: AppEnv) =>
  env.args.server !== undefined
    ? Effect.succeed(`the credentials of the server at ${env.args.server}`)
    : Effect.gen(function*() {
      const settings = yield* providerSettings(env)
      if (settings.kind === "replay") return "the recording's credentials"
      // The provider settings prefer BATON_API_KEY to the vendor's own variable.
      const baton = yield* Effect.orElseSucceed(Config.option(Config.redacted("BATON_API_KEY")), () => Option.none())
      const variable = Option.isSome(baton) ? "BATON_API_KEY" : settings.kind === "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY"
      return `the API key for ${settings.kind} at ${new URL(settings.live.baseUrl).origin} (${variable})`
    })

export const web = Effect.fn("Commands.web")(function*(args: CommonArgs, options: WebCommandOptions) {
  const io = nodeIo()
  const env = yield* resolveEnv(args, io.cwd())
  const model = yield* Layers.model(env)
  const layer = Layers.web(env, model.layer, {
    rules: env.settings.rules,
    settings: conversationSettings(env),
    instructions: env.instructions.map((f) => f.path),
    maxTurns: maxTurns(env),
    credentials: yield* credentialsLabel(env),
    // An apiKeyHelper's new key opens the page's auth lock by itself; a fixed variable needs a restart.
    ...(model.credentials !== undefined ? { credentialsChanged: model.credentials.changes } : {}),
    // The page's header panel and its cost (with settings `pricing`).
    info: { model: model.describe },
    ...(env.settings.file.pricing !== undefined ? { pricing: env.settings.file.pricing } : {}),
    host: options.host,
    port: options.port,
    token: options.token
  })
  const { web: webProgram } = yield* webCommand
  return yield* webProgram(io, { model: model.describe, workspace: env.workspace, token: options.token !== undefined }).pipe(Effect.provide(layer))
})

export const mcpList = Effect.fn("Commands.mcpList")(function*(args: CommonArgs, options: { readonly json: boolean }) {
  const io = nodeIo()
  const env = yield* resolveEnv(args, io.cwd())
  yield* listMcpServers(io, options).pipe(Effect.provide(Layers.mcpClients(env)))
})

export const usage = Effect.fn("Commands.usage")(function*(
  args: CommonArgs,
  options: { readonly json: boolean; readonly conversation: string | undefined; readonly since: string | undefined }
) {
  const io = nodeIo()
  const since = options.since === undefined ? undefined : parseSinceDate(options.since)
  if (options.since !== undefined && since === undefined) {
    return yield* new ConfigError({ source: "command line", field: "--since", message: `--since takes a date, YYYY-MM-DD (got "${options.since}")` })
  }
  const conversationId = options.conversation === undefined ? undefined : yield* parseConversationId(options.conversation)
  // The settings (for `pricing`) of the home and the current directory, as a task command reads them.
  const env = yield* existingHome(yield* resolveEnv(args, io.cwd()))
  const pricing = env.settings.file.pricing
  yield* showUsage(io, {
    json: options.json,
    ...(conversationId !== undefined ? { conversationId } : {}),
    ...(since !== undefined ? { since } : {}),
    ...(pricing !== undefined ? { pricing } : {})
  }).pipe(Effect.provide(Layers.backend(env)))
})

/**
 * The commands that read conversations never create a home: a mistyped `--home` is said, not shown
 * as an empty one (the SQLite store would create the directory). A database or server needs none.
 */
const existingHome = (env: AppEnv): Effect.Effect<AppEnv, ConfigError> =>
  env.args.server !== undefined || env.args.database !== undefined || Fs.existsSync(env.home)
    ? Effect.succeed(env)
    : Effect.fail(new ConfigError({
      source: "command line",
      field: "--home",
      message: `no Baton home at ${env.home}: nothing has run there (--home or BATON_HOME names the directory holding baton.db)`
    }))

export const sessionsList = Effect.fn("Commands.sessionsList")(function*(
  args: CommonArgs,
  options: { readonly json: boolean; readonly limit: number; readonly all?: boolean }
) {
  const io = nodeIo()
  yield* listSessions(io, options).pipe(Effect.provide(Layers.backend(yield* existingHome(storeEnv(args, io.cwd())))))
})

export const sessionsShow = Effect.fn("Commands.sessionsShow")(function*(args: CommonArgs, options: { readonly json: boolean; readonly id: string }) {
  const io = nodeIo()
  const id = yield* parseConversationId(options.id)
  yield* showSession(io, id, options).pipe(Effect.provide(Layers.backend(yield* existingHome(storeEnv(args, io.cwd())))))
})

export const sessionsFork = Effect.fn("Commands.sessionsFork")(function*(
  args: CommonArgs,
  options: { readonly id: string; readonly json: boolean; readonly at: number | undefined }
) {
  const io = nodeIo()
  const id = yield* parseConversationId(options.id)
  yield* forkSession(io, id, options).pipe(Effect.provide(Layers.backend(yield* existingHome(storeEnv(args, io.cwd())))))
})

export const sessionsExport = Effect.fn("Commands.sessionsExport")(function*(args: CommonArgs, options: { readonly id: string; readonly out: string | undefined }) {
  const io = nodeIo()
  const id = yield* parseConversationId(options.id)
  yield* exportSession(io, id, options).pipe(Effect.provide(Layers.backend(yield* existingHome(storeEnv(args, io.cwd())))))
})
