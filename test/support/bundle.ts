import { Effect } from "effect"
import { build } from "esbuild"
import { createRequire } from "node:module"
import * as Path from "node:path"

const requireHere = createRequire(import.meta.url)
// What scripts/build.mjs defines: a bundle outside the checkout cannot read package.json by path.
const VERSION = (requireHere("../../package.json") as { readonly version: string }).version

/**
 * A child-process entry under test/support bundled with esbuild into `dir`: started through tsx a
 * child spends about a second of CPU loading; bundled it starts in about 0.2 s. better-sqlite3
 * (native) stays external, and so do ws's optional native helpers.
 */
export const bundleEntry = (entry: string, dir: string) =>
  Effect.promise(async () => {
    const outfile = Path.join(dir, `${Path.basename(entry, ".ts")}.mjs`)
    await build({
      entryPoints: [Path.join(import.meta.dirname, entry)],
      bundle: true,
      platform: "node",
      format: "esm",
      outfile,
      logLevel: "warning",
      external: ["bufferutil", "utf-8-validate"],
      define: { BATON_VERSION: JSON.stringify(VERSION) },
      banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
      plugins: [{
        name: "native-sqlite",
        setup: (b) => {
          b.onResolve({ filter: /^better-sqlite3$/ }, () => ({ path: requireHere.resolve("better-sqlite3"), external: true }))
        }
      }]
    })
    return outfile
  })
