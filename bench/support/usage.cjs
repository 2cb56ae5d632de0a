// Preloaded (`node --require`) into every process a benchmark times: at exit it writes the process's
// own CPU time and peak RSS to $BENCH_USAGE_FILE, which a parent cannot read once the child is gone.
const fs = require("node:fs")
const file = process.env.BENCH_USAGE_FILE
if (file) {
  process.on("exit", () => {
    const u = process.resourceUsage()
    fs.writeFileSync(file, JSON.stringify({ userUs: u.userCPUTime, systemUs: u.systemCPUTime, maxRssKb: u.maxRSS }))
  })
}
