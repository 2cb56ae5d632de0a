#!/usr/bin/env node
// The bin is the bundle `npm ci` builds (the `prepare` script); say so plainly if it is missing.
import { existsSync } from "node:fs"
import * as Module from "node:module"

const bundle = new URL("../dist/bin/baton.js", import.meta.url)
if (!existsSync(bundle)) {
  process.stderr.write("baton: the CLI is not built yet: run `npm run build` (npm ci runs it for you)\n")
  process.exit(2)
}
// Compiling the bundle is most of a command's start-up; Node 22.1+ can keep the compiled code on disk
// (NODE_DISABLE_COMPILE_CACHE=1 turns it off). Node 20 has no such cache and compiles every time.
Module.enableCompileCache?.()
await import(bundle.href)
