import type * as Reactivity from "@effect/experimental/Reactivity"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import Sqlite from "better-sqlite3"
import { Context, Effect, Exit, FiberRef, type Scope } from "effect"

/**
 * The SQL client of the SQLite store: @effect/sql's own client (Client.make) over one better-sqlite3
 * connection, for everything, plus two cheap paths for the store's hot statements.
 *
 * better-sqlite3 is synchronous, so a statement is only a function call; through @effect/sql each one
 * also pays a span, a scope, the connection's semaphore and an effectful prepared-statement cache,
 * about ten times the statement itself. `exec` runs a statement on the connection at once, prepared
 * once per text, and `transaction` is BEGIN … COMMIT without the span and the scope. Exclusivity stays
 * whole: a transaction holds the connection across its yields (the one semaphore both kinds take), a
 * statement runs at once only when no transaction is open or when it belongs to the open one, and
 * either kind of transaction opened inside the other becomes a savepoint of it.
 */

export interface SqliteSql extends Client.SqlClient {
  /** One statement on the connection: at once, inside this fiber's transaction or outside any. */
  readonly exec: <A>(statement: Statement.Statement<A>) => Effect.Effect<ReadonlyArray<A>, SqlError>
  /** Like `withTransaction`, without a span or a scope: the store's commits run in it. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
  /** Statements run on the connection so far (BEGIN and COMMIT included), whichever path ran them. */
  readonly statements: () => number
}

/** Distinct statement texts kept prepared; the store uses a few dozen (group sizes are powers of two). */
const PREPARED = 512

const failed = (message: string) => (cause: unknown) => new SqlError({ cause, message })

export const makeSqliteClient = (
  filename: string
): Effect.Effect<SqliteSql, never, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.sync(() => new Sqlite(filename)),
      (db) => Effect.sync(() => db.close())
    )
    db.pragma("journal_mode = WAL")

    let statements = 0
    const prepared = new Map<string, Sqlite.Statement>()
    const prepare = (text: string): Sqlite.Statement => {
      let statement = prepared.get(text)
      if (statement === undefined) {
        if (prepared.size >= PREPARED) prepared.clear()
        statement = db.prepare(text)
        prepared.set(text, statement)
      }
      return statement
    }
    const runNow = (statement: Sqlite.Statement, params: ReadonlyArray<unknown>): ReadonlyArray<object> => {
      statements++
      if (statement.reader) return statement.all(...params)
      statement.run(...params)
      return []
    }
    const run = (text: string, params: ReadonlyArray<unknown>) =>
      Effect.try({ try: () => runNow(prepare(text), params), catch: failed("Failed to execute statement") })
    const unprepared = (text: string) =>
      Effect.try({ try: () => runNow(db.prepare(text), []), catch: failed("Failed to execute statement") })

    const connection: Connection = {
      execute: (text, params, transformRows) => transformRows ? Effect.map(run(text, params), transformRows) : run(text, params),
      executeRaw: (text, params) => run(text, params),
      executeValues: (text, params) =>
        Effect.try({
          try: () => {
            statements++
            const statement = prepare(text)
            if (!statement.reader) return (statement.run(...params), [])
            try {
              return statement.raw(true).all(...params) as ReadonlyArray<ReadonlyArray<unknown>>
            } finally {
              statement.raw(false)
            }
          },
          catch: failed("Failed to execute statement")
        }),
      executeUnprepared: (text, params, transformRows) => {
        const effect = Effect.try({ try: () => runNow(db.prepare(text), params ?? []), catch: failed("Failed to execute statement") })
        return transformRows ? Effect.map(effect, transformRows) : effect
      },
      executeStream: () => Effect.dieMessage("executeStream is not implemented for SQLite")
    }

    // One permit: held by the open transaction, whichever kind opened it. `open` mirrors it, so a
    // statement can see synchronously that nobody holds it and run without queueing.
    const semaphore = yield* Effect.makeSemaphore(1)
    let open = false
    // Only the wait is interruptible: once the permit is taken, `open` says so and its release is due.
    const take = (restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) =>
      Effect.zipRight(restore(semaphore.take(1)), Effect.sync(() => {
        open = true
      }))
    const release = Effect.zipRight(Effect.sync(() => {
      open = false
    }), semaphore.release(1))

    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.zipRight(take(restore), Effect.as(Effect.addFinalizer(() => release), connection))
    )

    const sql = yield* Client.make({
      acquirer: semaphore.withPermits(1)(Effect.succeed(connection)),
      transactionAcquirer,
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]]
    })

    /** Whether the fiber runs inside a transaction on this connection, and how deep. */
    const depthIn = (context: Context.Context<never>): number | undefined => {
      const outer = Context.getOption(context, Client.TransactionConnection)
      return outer._tag === "Some" && outer.value[0] === connection ? outer.value[1] : undefined
    }

    const exec = <A>(statement: Statement.Statement<A>): Effect.Effect<ReadonlyArray<A>, SqlError> =>
      Effect.withFiberRuntime((fiber) => {
        const [text, params] = statement.compile()
        const now = run(text, params) as Effect.Effect<ReadonlyArray<A>, SqlError>
        // Nothing runs between this check and the statement: it is one synchronous call.
        return !open || depthIn(fiber.currentContext) !== undefined ? now : semaphore.withPermits(1)(now)
      })

    // SQLite ends a transaction itself on some failures (a full disk, an I/O error): nothing to roll back then.
    const rollback = Effect.suspend(() => db.inTransaction ? Effect.orDie(unprepared("ROLLBACK")) : Effect.void)
    const finish = <A, E>(exit: Exit.Exit<A, E>) =>
      Exit.isSuccess(exit)
        ? Effect.matchEffect(unprepared("COMMIT"), {
          // A COMMIT that fails leaves the transaction open: undo it and report the failure.
          onFailure: (error) => Effect.zipRight(rollback, Effect.fail(error)),
          onSuccess: () => exit
        })
        : Effect.zipRight(rollback, exit)

    const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.withFiberRuntime<A, E | SqlError, R>((fiber) => {
          const depth = depthIn(fiber.currentContext)
          const id = depth === undefined ? 0 : depth + 1
          const body = Effect.exit(Effect.locallyWith(restore(effect), FiberRef.currentContext, Context.add(Client.TransactionConnection, [connection, id] as const)))
          if (id > 0) {
            // Same savepoint names as @effect/sql's, so the two kinds nest in each other.
            const name = `effect_sql_${id}`
            return Effect.zipRight(
              unprepared(`SAVEPOINT ${name}`),
              Effect.flatMap(body, (exit) => Exit.isSuccess(exit) ? exit : Effect.zipRight(Effect.orDie(unprepared(`ROLLBACK TO SAVEPOINT ${name}`)), exit))
            )
          }
          return Effect.zipRight(
            take(restore),
            Effect.ensuring(
              Effect.zipRight(unprepared("BEGIN"), Effect.flatMap(body, finish)),
              release
            )
          )
        })
      )

    return Object.assign(sql, { exec, transaction, statements: () => statements })
  })
