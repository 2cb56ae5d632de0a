#!/usr/bin/env node
// The bin is the bundle `npm ci` builds (the `prepare` script); say so plainly if it is missing.
import { existsSync } from "node:fs"

const bundle = new URL("../dist/bin/baton.js", import.meta.url)
if (!existsSync(bundle)) {
  process.stderr.write("baton: the CLI is not built yet: run `npm run build` (npm ci runs it for you)\n")
  process.exit(2)
}
await import(bundle.href)
