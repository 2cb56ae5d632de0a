import { makeBashTool } from "./Bash.js"
import { EditTool } from "./Edit.js"
import { GlobTool } from "./Glob.js"
import { GrepTool } from "./Grep.js"
import { LSTool } from "./LS.js"
import { makeReadTool } from "./Read.js"
import type { Tool, ToolLimits } from "./Tool.js"
import { WriteTool } from "./Write.js"

/** The coding tools, under the names models are trained on; `sandboxed`: Bash runs in the sandbox and says so. */
export const builtinTools = (limits: ToolLimits, sandboxed = false): ReadonlyArray<Tool> => [
  makeReadTool(limits),
  WriteTool,
  EditTool,
  makeBashTool(limits, sandboxed),
  GrepTool,
  GlobTool,
  LSTool
]
