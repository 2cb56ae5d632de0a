import { slugify } from "./src/slug.js"

const cases = [
  ["Hello World", "hello-world"],
  ["  Leading and trailing  ", "leading-and-trailing"],
  ["Rock & Roll", "rock-roll"],
  ["Already-a-slug", "already-a-slug"]
]

let failed = 0
for (const [input, expected] of cases) {
  const actual = slugify(input)
  if (actual === expected) {
    console.log(`ok    ${JSON.stringify(input)} -> ${JSON.stringify(actual)}`)
  } else {
    failed++
    console.log(`FAIL  ${JSON.stringify(input)} -> ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`)
  }
}
console.log(failed === 0 ? `all ${cases.length} passed` : `${failed} of ${cases.length} failed`)
process.exit(failed === 0 ? 0 : 1)
