import { assert, describe, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"

const domainDir = Path.join(import.meta.dirname, "..", "src", "domain")
const allowed = /^(effect|node:path|\.\/[A-Za-z]+\.js)$/

describe("src/domain", () => {
  it("imports only effect, node:path and other domain modules (no services, programs or I/O)", () => {
    const offenders: Array<string> = []
    for (const file of Fs.readdirSync(domainDir)) {
      const text = Fs.readFileSync(Path.join(domainDir, file), "utf8")
      for (const m of text.matchAll(/^import[^"']*["']([^"']+)["']/gm)) {
        if (!allowed.test(m[1]!)) offenders.push(`${file}: ${m[1]}`)
      }
      if (/\bprocess\.|\bDate\.now\(|Math\.random\(/.test(text)) offenders.push(`${file}: uses process/clock/randomness`)
    }
    assert.deepStrictEqual(offenders, [])
  })
})
