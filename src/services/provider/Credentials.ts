import { Effect, Option, Redacted, Ref, Schedule, Stream } from "effect"
import { execFile } from "node:child_process"
import { ConfigError } from "../../domain/Errors.js"

/**
 * The API key a live provider sends, read again on every request, so that new credentials take
 * effect without a restart. Its sources, later wins: the environment (fixed for the process),
 * Claude Code's `apiKeyHelper` convention (a settings key naming a shell command whose stdout is the
 * key: run at start and again after the model refused the key), and `/key` in chat (this process
 * only). A key is never logged, stored or put in a message: a helper's output does not appear in its
 * errors.
 */
export interface Credentials {
  readonly current: Effect.Effect<Option.Option<Redacted.Redacted<string>>>
  /** Where the key comes from, for the auth lock's message: a variable or the helper, never the key. */
  readonly source: string
  /** The model refused `key`: remembered (so a changed key can be told apart), and the helper run again. */
  readonly rejected: (key: Option.Option<Redacted.Redacted<string>>) => Effect.Effect<void>
  /** Re-reads (runs the helper again, if there is one); true when the key now differs from the one refused last. */
  readonly refresh: Effect.Effect<boolean>
  /** `/key`: a key for this process only. */
  readonly set: (key: Redacted.Redacted<string>) => Effect.Effect<void>
  /**
   * One look: while the model's last refusal stands, re-reads (runs the helper) and answers true when
   * the key now differs from the refused one, which answers the refusal; otherwise false, reading nothing.
   */
  readonly changed: Effect.Effect<boolean>
  /**
   * `changed` every REREAD_EVERY, emitting each true: an auth lock (chat's prompt, the web page) opens by
   * itself when a helper starts printing another key. Without a helper it never emits (the
   * environment cannot change while Baton runs).
   */
  readonly changes: Stream.Stream<void>
}

/** How often a standing refusal has the helper run again. */
export const REREAD_EVERY = "1 second"

const HELPER_TIMEOUT_MS = 30_000

/** Runs the helper through the shell; its trimmed stdout is the key. Fails without showing its output. */
export const runHelper = (command: string, cwd: string): Effect.Effect<Redacted.Redacted<string>, ConfigError> =>
  Effect.async<Redacted.Redacted<string>, ConfigError>((resume) => {
    const fail = (why: string) =>
      resume(Effect.fail(new ConfigError({ source: "settings", field: "apiKeyHelper", message: `apiKeyHelper \`${command}\` ${why}` })))
    const child = execFile("/bin/sh", ["-c", command], { cwd, timeout: HELPER_TIMEOUT_MS, maxBuffer: 1 << 20 }, (error, stdout) => {
      if (error !== null) return fail(`failed (${error.code !== undefined ? `exit ${String(error.code)}` : error.signal ?? "error"})`)
      const key = stdout.trim()
      if (key === "") return fail("printed no key")
      resume(Effect.succeed(Redacted.make(key)))
    })
    return Effect.sync(() => void child.kill("SIGKILL"))
  })

const same = (a: Option.Option<Redacted.Redacted<string>>, b: Option.Option<Redacted.Redacted<string>>) =>
  Option.getEquivalence<Redacted.Redacted<string>>((x, y) => Redacted.value(x) === Redacted.value(y))(a, b)

export const makeCredentials = (options: {
  readonly initial: Option.Option<Redacted.Redacted<string>>
  readonly source: string
  readonly helper?: { readonly command: string; readonly cwd: string }
}): Effect.Effect<Credentials> =>
  Effect.gen(function*() {
    const key = yield* Ref.make(options.initial)
    const refused = yield* Ref.make(Option.none<Option.Option<Redacted.Redacted<string>>>())
    // A refusal no change has answered yet.
    const standing = yield* Ref.make(false)
    const reread = options.helper === undefined
      ? Effect.void
      : runHelper(options.helper.command, options.helper.cwd).pipe(
        Effect.flatMap((fresh) => Ref.set(key, Option.some(fresh))),
        Effect.catchAll((error) => Effect.logWarning(error.message))
      )
    const refresh = Effect.gen(function*() {
      yield* reread
      const last = yield* Ref.get(refused)
      return Option.isNone(last) || !same(last.value, yield* Ref.get(key))
    })
    const changed = Effect.flatMap(Ref.get(standing), (waiting) =>
      !waiting ? Effect.succeed(false) : Effect.tap(refresh, (differs) => (differs ? Ref.set(standing, false) : Effect.void)))
    return {
      current: Ref.get(key),
      source: options.source,
      rejected: (sent) => Effect.zipRight(Effect.zipRight(Ref.set(refused, Option.some(sent)), Ref.set(standing, true)), reread),
      refresh,
      set: (fresh) => Ref.set(key, Option.some(fresh)),
      changed,
      changes: options.helper === undefined
        ? Stream.never
        : Stream.repeatEffectWithSchedule(changed, Schedule.spaced(REREAD_EVERY)).pipe(Stream.filter((differs) => differs), Stream.as(undefined))
    } satisfies Credentials
  })
