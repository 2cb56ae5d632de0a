// An MCP server for the tests, written with the official SDK (the same one Baton's client uses).
// Plain JavaScript so that node starts it directly, in tens of milliseconds.
//
//   node fixture-server.mjs            stdio
//   node fixture-server.mjs --http     streamable HTTP on 127.0.0.1 (port 0); prints `listening PORT`
//   node fixture-server.mjs --sse      the older HTTP+SSE transport on 127.0.0.1; prints `listening PORT`
//
// Every event a test may wait for is appended to $FIXTURE_LOG, one line each ("start sleep 7",
// "cancelled sleep 7 …", "child 1234"), so a test waits on the file instead of on time.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { z } from "zod"

const log = (line) => {
  if (process.env.FIXTURE_LOG) Fs.appendFileSync(process.env.FIXTURE_LOG, `${line}\n`)
}

// A 1×1 transparent PNG.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

const text = (value) => ({ content: [{ type: "text", text: value }] })

const waitForFile = (file, signal) =>
  new Promise((resolve, reject) => {
    const watcher = Fs.watch(Path.dirname(file), () => check())
    const check = () => {
      if (!Fs.existsSync(file)) return
      watcher.close()
      resolve()
    }
    signal.addEventListener("abort", () => {
      watcher.close()
      reject(new Error("cancelled"))
    })
    check()
  })

const makeServer = (request) => {
  const server = new McpServer({ name: "baton-fixture", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } })
  server.registerTool("echo", {
    description: "Echoes the text back",
    inputSchema: { text: z.string() },
    annotations: { readOnlyHint: true }
  }, ({ text: value }) => text(`echo: ${value}`))
  server.registerTool("fail", {
    description: "Always fails, as a tool result with isError",
    inputSchema: { message: z.string().optional() }
  }, ({ message }) => ({ content: [{ type: "text", text: message ?? "it failed" }], isError: true }))
  server.registerTool("image", { description: "Returns a tiny PNG and a caption" }, () => ({
    content: [{ type: "text", text: "a pixel" }, { type: "image", data: PNG, mimeType: "image/png" }]
  }))
  server.registerTool("structured", {
    description: "Returns structured content",
    outputSchema: { sum: z.number(), terms: z.array(z.number()) }
  }, () => ({ content: [], structuredContent: { sum: 5, terms: [2, 3] } }))
  server.registerTool("big", { description: "Returns 100000 characters", inputSchema: {} }, () => text("x".repeat(100_000)))
  server.registerTool("sleep", {
    description: "Waits, then answers; records a cancellation",
    inputSchema: { ms: z.number().optional() }
  }, ({ ms }, extra) =>
    new Promise((resolve) => {
      log(`start sleep ${extra.requestId}`)
      const timer = setTimeout(() => resolve(text(`slept ${ms ?? 3_600_000} ms`)), ms ?? 3_600_000)
      extra.signal.addEventListener("abort", () => {
        clearTimeout(timer)
        log(`cancelled sleep ${extra.requestId} ${String(extra.signal.reason ?? "")}`)
        resolve(text("cancelled"))
      })
    }))
  server.registerTool("hold", {
    description: "Answers once the file release-NAME exists next to $FIXTURE_LOG",
    inputSchema: { name: z.string() }
  }, async ({ name }, extra) => {
    log(`start hold ${name}`)
    await waitForFile(Path.join(Path.dirname(process.env.FIXTURE_LOG ?? "."), `release-${name}`), extra.signal)
    log(`end hold ${name}`)
    return text(`held ${name}`)
  })
  server.registerTool("crash", { description: "Exits the server process in the middle of the call" }, () => {
    process.stderr.write("fixture: crashing on purpose\n")
    process.exit(3)
  })
  server.registerTool("spawn_child", { description: "Starts a long sleep in the server's process group" }, () => {
    const child = spawn("sleep", ["300"], { stdio: "ignore" })
    log(`child ${child.pid}`)
    return text(`child ${child.pid}`)
  })
  server.registerTool("add_tool", {
    description: "Adds a tool named NAME (the server then says its list changed)",
    inputSchema: { name: z.string() }
  }, ({ name }) => {
    server.registerTool(name, { description: `added at run time` }, () => text(`${name} ran`))
    return text(`added ${name}`)
  })
  server.registerTool("whoami", { description: "The Authorization header of this HTTP request" }, () =>
    text(`authorization: ${request?.()?.headers.authorization ?? "(none)"}`))
  // $FIXTURE_PAGE_SIZE: tools/list answers in pages of that many, with nextCursor (McpServer never pages).
  const pageSize = Number(process.env.FIXTURE_PAGE_SIZE ?? 0)
  if (pageSize > 0) {
    const handlers = server.server._requestHandlers
    const all = handlers.get("tools/list")
    handlers.set("tools/list", async (req, extra) => {
      const { tools } = await all(req, extra)
      const from = Number(req.params?.cursor ?? 0)
      log(`list page ${from}`)
      const next = from + pageSize
      return { tools: tools.slice(from, next), ...(next < tools.length ? { nextCursor: String(next) } : {}) }
    })
  }
  return server
}

const mode = process.argv[2]
log(`pid ${process.pid}`)

if (mode === undefined) {
  await makeServer().connect(new StdioServerTransport())
} else {
  let current
  const sessions = new Map()
  const http = Http.createServer(async (req, res) => {
    current = req
    if (mode === "--http") {
      const id = req.headers["mcp-session-id"]
      let transport = typeof id === "string" ? sessions.get(id) : undefined
      if (transport === undefined) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => sessions.set(sid, transport)
        })
        transport.onclose = () => {
          if (transport.sessionId) {
            sessions.delete(transport.sessionId)
            log(`session closed ${transport.sessionId}`)
          }
        }
        await makeServer(() => current).connect(transport)
      }
      await transport.handleRequest(req, res)
      return
    }
    if (req.method === "GET" && req.url === "/sse") {
      const transport = new SSEServerTransport("/messages", res)
      sessions.set(transport.sessionId, transport)
      res.on("close", () => sessions.delete(transport.sessionId))
      await makeServer(() => current).connect(transport)
      return
    }
    if (req.method === "POST" && req.url?.startsWith("/messages")) {
      const sid = new URL(req.url, "http://x").searchParams.get("sessionId")
      const transport = sessions.get(sid)
      if (transport === undefined) return void res.writeHead(404).end()
      await transport.handlePostMessage(req, res)
      return
    }
    res.writeHead(404).end()
  })
  http.listen(0, "127.0.0.1", () => process.stdout.write(`listening ${http.address().port}\n`))
}
