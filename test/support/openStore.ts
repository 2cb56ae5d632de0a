/**
 * Child process: opens the store at each path given and prints one JSON line per path: {"ok":true},
 * the StoreError it failed with, or the defect. Used to open stores as another (unprivileged) user.
 */
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { layerSqlite } from "../../src/services/store/Sqlite.js"

for (const filename of process.argv.slice(2)) {
  const exit = await Effect.runPromiseExit(Effect.scoped(Layer.build(layerSqlite({ filename }))))
  if (Exit.isSuccess(exit)) {
    process.stdout.write(`${JSON.stringify({ ok: true })}\n`)
  } else {
    const failure = Cause.failureOption(exit.cause)
    process.stdout.write(
      `${JSON.stringify(Option.isSome(failure) ? { error: failure.value } : { defect: Cause.pretty(exit.cause) })}\n`
    )
  }
}
