import type { CallToolResult, ContentBlock, Tool } from "@modelcontextprotocol/sdk/types.js"
import type { McpCallResult, McpContent, McpTool, McpToolAnnotations } from "../McpClients.js"

/** The SDK's shapes as the McpClients port states them: only what Baton uses, nothing of zod. */

export const toTool = (tool: Tool): McpTool => {
  const { $schema: _ignored, ...inputSchema } = tool.inputSchema
  const hints = tool.annotations ?? {}
  const annotations: McpToolAnnotations = {
    ...(hints.title !== undefined ? { title: hints.title } : {}),
    ...(hints.readOnlyHint !== undefined ? { readOnlyHint: hints.readOnlyHint } : {}),
    ...(hints.destructiveHint !== undefined ? { destructiveHint: hints.destructiveHint } : {}),
    ...(hints.idempotentHint !== undefined ? { idempotentHint: hints.idempotentHint } : {}),
    ...(hints.openWorldHint !== undefined ? { openWorldHint: hints.openWorldHint } : {})
  }
  return {
    name: tool.name,
    description: tool.description ?? tool.title ?? "",
    inputSchema: { ...inputSchema, type: "object" },
    annotations
  }
}

const toContent = (block: ContentBlock): McpContent => {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text }
    case "image":
    case "audio":
      return { type: block.type, mimeType: block.mimeType, data: block.data }
    case "resource_link":
      return { type: "resource_link", uri: block.uri, name: block.name, ...(block.description !== undefined ? { description: block.description } : {}) }
    case "resource": {
      const r = block.resource
      return {
        type: "resource",
        uri: r.uri,
        ...(r.mimeType !== undefined ? { mimeType: r.mimeType } : {}),
        ...("text" in r && typeof r.text === "string" ? { text: r.text } : {}),
        ...("blob" in r && typeof r.blob === "string" ? { blob: r.blob } : {})
      }
    }
  }
}

/** A result of `tools/call`; a server on the 2024-10-07 protocol answers `{ toolResult }` instead. */
export const toResult = (result: CallToolResult | { readonly toolResult: unknown }): McpCallResult => {
  if ("toolResult" in result && !("content" in result)) {
    return { content: [{ type: "text", text: JSON.stringify(result.toolResult) }], isError: false }
  }
  const r = result as CallToolResult
  return {
    content: (r.content ?? []).map(toContent),
    isError: r.isError === true,
    ...(r.structuredContent !== undefined ? { structuredContent: r.structuredContent } : {})
  }
}
