// Preloaded (`node --expose-gc --require`) into a server whose memory a benchmark samples: on SIGUSR2
// it collects garbage, then writes its RSS and heap to $BENCH_MEMORY_FILE (and, with
// $BENCH_HEAP_DIR, a heap snapshot there), so the figures are what is still referenced, not what the
// collector has not reached yet.
const fs = require("node:fs")
const path = require("node:path")
const file = process.env.BENCH_MEMORY_FILE
let taken = 0
if (file) {
  process.on("SIGUSR2", () => {
    // Twice: the first full collection's finalizers free more for the second.
    if (typeof global.gc === "function") {
      global.gc()
      global.gc()
    }
    const heapDir = process.env.BENCH_HEAP_DIR
    if (heapDir) require("node:v8").writeHeapSnapshot(path.join(heapDir, `heap-${++taken}.heapsnapshot`))
    const m = process.memoryUsage()
    const status = fs.readFileSync("/proc/self/status", "utf8")
    const kb = (field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0)
    fs.writeFileSync(
      `${file}.tmp`,
      JSON.stringify({
        rssKb: kb("VmRSS"),
        anonKb: kb("RssAnon"),
        fileKb: kb("RssFile"),
        heapUsed: m.heapUsed,
        heapTotal: m.heapTotal,
        external: m.external,
        arrayBuffers: m.arrayBuffers,
        // Committed size of each V8 space, in KB: which of them the RSS's swings come from.
        spaces: Object.fromEntries(require("node:v8").getHeapSpaceStatistics().map((x) => [x.space_name, Math.round(x.space_size / 1024)]))
      })
    )
    fs.renameSync(`${file}.tmp`, file)
  })
}
