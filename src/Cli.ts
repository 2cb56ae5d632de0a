import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Console from "effect/Console"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { type CommonArgs, noCommonArgs } from "./programs/cli/CommonArgs.js"
import { commandTree, resolve } from "./programs/cli/CommandTree.js"
import { helpPage } from "./programs/cli/HelpPage.js"
import { baseUrlOption, common, databaseOption, homeOption, modelOption, noProjectInstructionsOption, providerOption, sandboxOption, serverOption, toArgs } from "./programs/cli/CommonOptions.js"
import { UsageError, usageErrorMessage } from "./programs/cli/UsageError.js"
import { VERSION } from "./services/Version.js"

/**
 * The `baton` command line: options, arguments and help. Each handler hands its parsed options to
 * programs/cli/Commands.ts, which resolves the environment (Env.ts), provides the layers
 * (Layers.ts) and runs one program.
 */


const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON object per line on stdout, nothing else"))

/** Command bodies load on first use: `baton run --help` parses only this file and @effect/cli. */
type Commands = typeof import("./programs/cli/Commands.js")
const commands = Effect.promise((): Promise<Commands> => import("./programs/cli/Commands.js"))
/** Telemetry (OTEL_*) wraps the whole command; only `serve` exports metrics. */
const lazy = <A, E, R>(f: (m: Commands) => Effect.Effect<A, E, R>, options: { readonly metrics: boolean } = { metrics: false }) =>
  Effect.flatMap(commands, (m) => m.withTelemetry(f(m), options))

const run = Command.make(
  "run",
  {
    common,
    json,
    image: Options.text("image").pipe(
      Options.withPseudoName("FILE"),
      Options.withDescription("Attach an image (PNG, JPEG, GIF or WebP) to the prompt; may be repeated"),
      Options.repeated
    ),
    prompt: Args.text({ name: "prompt" }).pipe(
    Args.repeated,
    Args.withDescription("What to do (`-` reads it from stdin); with --continue or --conversation and no prompt, resumes the calls left waiting")
  ) },
  (a) => lazy((m) => m.run(toArgs(a.common), { json: a.json, prompt: a.prompt, images: a.image }))
).pipe(Command.withDescription("Run one task and exit: the answer streams to stdout, progress to stderr"))

const chat = Command.make("chat", { common }, (a) => lazy((m) => m.chat(toArgs(a.common)))).pipe(
  Command.withDescription("An interactive session: streaming answers, an approval prompt per call, Ctrl-C interrupts a task")
)

const replay = Command.make(
  "replay",
  { common, json, cassette: Args.file({ name: "cassette", exists: "yes" }).pipe(Args.withDescription("A cassette recorded with BATON_RECORD_CASSETTE")) },
  (a) => lazy((m) => m.replay(toArgs(a.common), { json: a.json, cassette: a.cassette }))
).pipe(Command.withDescription("Run a recorded task again from its cassette, with no model and no network"))

const demo = Command.make(
  "demo",
  { fast: Options.boolean("fast").pipe(Options.withDescription("Do not pace the output for reading")) },
  (a) => lazy((m) => m.demo({ fast: a.fast }))
).pipe(Command.withDescription("A recorded coding task through the whole stack: no API key, no network"))

const serve = Command.make(
  "serve",
  {
    provider: providerOption,
    model: modelOption,
    baseUrl: baseUrlOption,
    home: homeOption,
    database: databaseOption,
    host: Options.text("host").pipe(Options.withDescription("Address to bind (default 127.0.0.1; any other needs a token)"), Options.optional),
    port: Options.integer("port").pipe(Options.withDescription("Port (default 8283; 0 picks a free one)"), Options.optional),
    token: Options.redacted("token").pipe(Options.withDescription("Require this bearer token (BATON_TOKEN); never logged"), Options.optional),
    cluster: Options.boolean("cluster").pipe(
      Options.withDescription("Run as one runner of a cluster: every `serve --cluster` on the same --database shares the conversations")
    ),
    runnerHost: Options.text("runner-host").pipe(
      Options.withDescription("With --cluster: the address other runners reach this one at (default 127.0.0.1)"),
      Options.optional
    ),
    runnerPort: Options.integer("runner-port").pipe(Options.withDescription("With --cluster: the runner's TCP port (default 34431)"), Options.optional),
    shardLockExpiration: Options.integer("shard-lock-expiration").pipe(
      Options.withPseudoName("MS"),
      Options.withFallbackConfig(Config.integer("BATON_SHARD_LOCK_EXPIRATION_MS")),
      Options.withDescription("With --cluster: how long a lost runner's conversations wait for a new owner (default 10000; BATON_SHARD_LOCK_EXPIRATION_MS)"),
      Options.optional
    ),
    passivation: Options.integer("passivation").pipe(
      Options.withPseudoName("MS"),
      Options.withFallbackConfig(Config.integer("BATON_PASSIVATION_MS")),
      Options.withDescription("How long an idle conversation stays in memory before only the store holds it (default 30000; BATON_PASSIVATION_MS)"),
      Options.optional
    )
  },
  (a) =>
    lazy((m) =>
      m.serve(
        {
          ...noCommonArgs,
          provider: Option.getOrUndefined(a.provider),
          model: Option.getOrUndefined(a.model),
          baseUrl: Option.getOrUndefined(a.baseUrl),
          home: Option.getOrUndefined(a.home),
          database: Option.getOrUndefined(a.database)
        },
        {
          host: Option.getOrUndefined(a.host),
          port: Option.getOrUndefined(a.port),
          token: Option.getOrUndefined(a.token),
          cluster: a.cluster,
          runnerHost: Option.getOrUndefined(a.runnerHost),
          runnerPort: Option.getOrUndefined(a.runnerPort),
          shardLockExpirationMs: Option.getOrUndefined(a.shardLockExpiration),
          passivationMs: Option.getOrUndefined(a.passivation)
        }
      ), { metrics: true })
).pipe(Command.withDescription("Host conversations over HTTP + SSE for clients using --server (runs survive disconnects)"))

const web = Command.make(
  "web",
  {
    provider: providerOption,
    model: modelOption,
    baseUrl: baseUrlOption,
    workspace: common.workspace,
    home: homeOption,
    database: databaseOption,
    server: serverOption,
    maxTurns: common.maxTurns,
    sandbox: sandboxOption,
    noProjectInstructions: noProjectInstructionsOption,
    host: Options.text("host").pipe(Options.withPseudoName("H"), Options.withDescription("Address to bind (default 127.0.0.1; any other needs --token)"), Options.optional),
    port: Options.integer("port").pipe(Options.withPseudoName("P"), Options.withDescription("Port (default 8284; 0 picks a free one)"), Options.optional),
    token: Options.redacted("token").pipe(
      Options.withPseudoName("T"),
      Options.withDescription("Require this token: the printed URL carries it once and sets a cookie; never logged"),
      Options.optional
    )
  },
  (a) =>
    lazy((m) =>
      m.web(
        {
          ...noCommonArgs,
          provider: Option.getOrUndefined(a.provider),
          model: Option.getOrUndefined(a.model),
          baseUrl: Option.getOrUndefined(a.baseUrl),
          workspace: Option.getOrUndefined(a.workspace),
          home: Option.getOrUndefined(a.home),
          database: Option.getOrUndefined(a.database),
          server: Option.getOrUndefined(a.server),
          maxTurns: Option.getOrUndefined(a.maxTurns),
          sandbox: Option.getOrUndefined(a.sandbox),
          projectInstructions: !a.noProjectInstructions
        },
        { host: Option.getOrUndefined(a.host), port: Option.getOrUndefined(a.port), token: Option.getOrUndefined(a.token) }
      )
    )
).pipe(Command.withDescription("A live page for this workspace's sessions: streamed answers, approve buttons, steer, stop (tools run here)"))

/** Reading conversations needs the store, not a model or a workspace's settings. */
const store = { home: homeOption, database: databaseOption, server: serverOption }
const storeArgs = (a: Command.Command.ParseConfig<typeof store>): CommonArgs => ({
  ...noCommonArgs,
  home: Option.getOrUndefined(a.home),
  database: Option.getOrUndefined(a.database),
  server: Option.getOrUndefined(a.server)
})
const sessionId = Args.text({ name: "id" }).pipe(Args.withDescription("A conversation id"))

const sessions = Command.make("sessions").pipe(
  Command.withDescription("List, show, export and fork conversations"),
  Command.withSubcommands([
    Command.make(
      "list",
      {
        ...store,
        json,
        limit: Options.integer("limit").pipe(Options.withPseudoName("N"), Options.withDefault(20), Options.withDescription("How many")),
        all: Options.boolean("all").pipe(Options.withDescription("List subagents' conversations as their own entries too"))
      },
      (a) => lazy((m) => m.sessionsList(storeArgs(a), { json: a.json, limit: a.limit, all: a.all }))
    ).pipe(Command.withDescription("Recent conversations, newest first, each with its subagents under it")),
    Command.make("show", { ...store, json, id: sessionId }, (a) => lazy((m) => m.sessionsShow(storeArgs(a), { json: a.json, id: a.id }))).pipe(
      Command.withDescription("A conversation's history (--json: the recorded events, one per line)")
    ),
    Command.make(
      "export",
      { ...store, id: sessionId, out: Options.text("out").pipe(Options.withPseudoName("DIR"), Options.withDescription("Directory for trace_001.jsonl, … (default ./baton-trace-<id>)"), Options.optional) },
      (a) => lazy((m) => m.sessionsExport(storeArgs(a), { id: a.id, out: Option.getOrUndefined(a.out) }))
    ).pipe(Command.withDescription("Write the conversation's trace segments as JSONL files")),
    Command.make(
      "fork",
      {
        ...store,
        json,
        id: sessionId,
        at: Options.integer("at").pipe(
          Options.withPseudoName("N"),
          Options.withDescription("Copy the context up to the item at this position (`sessions show --json` gives positions; default: all)"),
          Options.optional
        )
      },
      (a) => lazy((m) => m.sessionsFork(storeArgs(a), { id: a.id, json: a.json, at: Option.getOrUndefined(a.at) }))
    ).pipe(Command.withDescription("A new conversation continuing from this one's context (prints its id)"))
  ])
)

const usage = Command.make(
  "usage",
  {
    ...store,
    json,
    conversation: Options.text("conversation").pipe(Options.withPseudoName("ID"), Options.withDescription("Only this conversation"), Options.optional),
    since: Options.text("since").pipe(Options.withPseudoName("YYYY-MM-DD"), Options.withDescription("Only requests from this day on (UTC)"), Options.optional)
  },
  (a) => lazy((m) => m.usage(storeArgs(a), { json: a.json, conversation: Option.getOrUndefined(a.conversation), since: Option.getOrUndefined(a.since) }))
).pipe(Command.withDescription("Token usage and cost per conversation and model, from every model request recorded (cost from settings `pricing`)"))

const mcp = Command.make("mcp").pipe(
  Command.withDescription("The workspace's MCP servers (settings mcpServers, <workspace>/.mcp.json)"),
  Command.withSubcommands([
    Command.make(
      "list",
      { json, workspace: common.workspace, home: homeOption },
      (a) => lazy((m) => m.mcpList({ ...noCommonArgs, workspace: Option.getOrUndefined(a.workspace), home: Option.getOrUndefined(a.home) }, { json: a.json }))
    ).pipe(Command.withDescription("Start each configured server, show whether it started and the tools it offers, then stop them"))
  ])
)

export const baton = Command.make("baton").pipe(
  Command.withDescription("An agent runtime: a model proposes tool calls, you or your rules approve them, Baton runs them."),
  Command.withSubcommands([run, chat, sessions, usage, mcp, serve, web, replay, demo])
)

const parse = Command.run(baton, { name: "baton", version: VERSION })
const tree = commandTree(baton.descriptor)

/**
 * Runs `argv` (process.argv). `--help` pages and usage errors are written from the command tree
 * (HelpPage.ts, UsageError.ts); the parser's own printing of its errors is dropped by main.ts.
 */
export const cli = (argv: ReadonlyArray<string>) => {
  const words = argv.slice(2)
  const { command, rest } = resolve(tree, words)
  // `baton sessions` alone asks what `sessions` offers, as `--help` does.
  if (words.includes("--help") || words.includes("-h") || (command.subcommands.length > 0 && rest.length === 0)) return Console.log(helpPage(command))
  return parse(argv).pipe(
    Effect.catchIf(ValidationError.isValidationError, (error) => Effect.fail(new UsageError({ message: usageErrorMessage(tree, words, error) })))
  )
}
