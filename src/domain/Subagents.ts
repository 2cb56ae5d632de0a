import { Either, JSONSchema, ParseResult, Schema } from "effect"
import type { ToolDefinition } from "./Conversation.js"

/**
 * Subagents: the `Task` tool (Claude Code's name and arguments, so models trained on it use it well)
 * and the subagent types it may start — settings `agents` plus the built-in `general-purpose`.
 * A child is offered neither `Task` nor anything outside its type's `tools`.
 */

export const TASK_TOOL = "Task"

export const GENERAL_PURPOSE = "general-purpose"

/** One subagent type as settings write it: `"agents": { "NAME": { … } }`. */
export const AgentDefinition = Schema.Struct({
  description: Schema.String,
  /** The child conversation's system prompt. */
  prompt: Schema.String,
  /** The tools the child is offered (all of the workspace's but `Task` when absent). */
  tools: Schema.optionalWith(Schema.Array(Schema.NonEmptyString), { exact: true }),
  /** Overrides the model for the child conversation. */
  model: Schema.optionalWith(Schema.NonEmptyString, { exact: true })
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type AgentDefinition = typeof AgentDefinition.Type

export const Agents = Schema.Record({ key: Schema.NonEmptyString, value: AgentDefinition })
export type Agents = typeof Agents.Type

export const GENERAL_PURPOSE_PROMPT = [
  "You are a subagent of Baton, a coding agent, working in the user's workspace on one task the main agent gave you.",
  "Use the tools to research and change files as the task needs; every call may need the user's approval.",
  "When you are done, reply with a concise report of what you found or did: the main agent sees only that reply."
].join("\n")

const builtin: Agents = {
  [GENERAL_PURPOSE]: {
    description: "General-purpose agent for researching complex questions, searching for code and executing multi-step tasks.",
    prompt: GENERAL_PURPOSE_PROMPT
  }
}

/**
 * Whether a child of this type is offered the tool: never `Task`; otherwise every tool when the type
 * lists none, else the listed ones (`mcp__server` lists all of that MCP server's tools, as in rules).
 */
export const offersTool = (agent: AgentDefinition, name: string): boolean =>
  name !== TASK_TOOL &&
  (agent.tools === undefined || agent.tools.some((tool) => tool === name || (tool.startsWith("mcp__") && name.startsWith(`${tool}__`))))

/** The types a session may start: the built-in one, then the settings' (which may replace it). */
export const subagentTypes = (configured: Agents | undefined): Agents => ({ ...builtin, ...configured })

export const TaskArgs = Schema.Struct({
  description: Schema.String.annotations({ description: "A short (3-5 word) description of the task" }),
  prompt: Schema.String.annotations({ description: "The task for the agent to perform" }),
  subagent_type: Schema.optionalWith(Schema.String.annotations({ description: "The type of specialized agent to use for this task" }), {
    exact: true
  })
})
export type TaskArgs = typeof TaskArgs.Type

const { $schema: _ignored, ...parameters } = JSONSchema.make(TaskArgs)

export const taskDefinition = (types: Agents): ToolDefinition => ({
  name: TASK_TOOL,
  description: [
    "Launch a new agent to handle a complex, multi-step task on its own. It works in the same workspace with its own conversation",
    "and returns one final report. Launch several at once (several Task calls in one message) to work in parallel.",
    "Available agent types (subagent_type, default general-purpose):",
    ...Object.entries(types).map(([name, agent]) => `- ${name}: ${agent.description}`)
  ].join("\n"),
  parameters
})

const decodeArgs = Schema.decodeUnknownEither(Schema.parseJson(TaskArgs))

/** The call's arguments and its type, or the error text its result carries. */
export const parseTaskCall = (
  rawArguments: string,
  types: Agents
): Either.Either<{ readonly args: TaskArgs; readonly name: string; readonly agent: AgentDefinition }, string> =>
  Either.flatMap(
    Either.mapLeft(decodeArgs(rawArguments), (error) => `invalid Task arguments: ${ParseResult.TreeFormatter.formatErrorSync(error)}`),
    (args) => {
      const name = args.subagent_type ?? GENERAL_PURPOSE
      const agent = types[name]
      return agent === undefined
        ? Either.left(`unknown subagent_type "${name}"; known types: ${Object.keys(types).join(", ")}`)
        : Either.right({ args, name, agent })
    }
  )
