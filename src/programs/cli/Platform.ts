import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as HashSet from "effect/HashSet"
import * as Logger from "effect/Logger"

/**
 * What the command line runs in: the file system, paths and terminal @effect/cli needs (not
 * NodeContext: its command executor and workers would load for nothing), and logs (rare warnings)
 * on stderr, since stdout belongs to the answer, or to `--json` events only.
 *
 * Provided one after another, the logger set on the fiber: every command pays for this before it
 * parses a word, and as one merged layer with Logger.replace it cost ~1,400 Effect steps (a merge
 * builds each branch in a fiber of its own) for four values; now ~600 (test/cli/StartupWork counts them).
 */
export const withPlatform = <A, E, R>(program: Effect.Effect<A, E, R>) =>
  program.pipe(
    Effect.provide(NodeTerminal.layer),
    Effect.provide(NodePath.layer),
    Effect.provide(NodeFileSystem.layer),
    Effect.locallyWith(FiberRef.currentLoggers, (loggers) =>
      HashSet.add(HashSet.remove(loggers, Logger.defaultLogger), Logger.prettyLogger({ stderr: true })))
  )
