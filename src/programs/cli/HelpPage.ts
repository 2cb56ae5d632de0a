import { type ArgSpec, commandName, type CommandSpec, type OptionSpec } from "./CommandTree.js"
import { VERSION } from "../../services/Version.js"

/**
 * `baton <command> --help`, written from the command tree: the program's name in the usage line,
 * optional options in brackets, each option once with its own description (never the parser's
 * generic words for a type). `baton` and `baton --help` alone are Help.ts's overview.
 */

const optionUsage = (o: OptionSpec): string => {
  const word = o.placeholder === undefined ? o.names[0]! : `${o.names[0]} ${o.placeholder}`
  return o.optional ? `[${word}]${o.repeated ? "..." : ""}` : `${word}${o.repeated ? "..." : ""}`
}

const argUsage = (a: ArgSpec): string => {
  const word = `${a.name}${a.repeated ? "..." : ""}`
  return a.optional ? `[${word}]` : word
}

const wrap = (text: string, indent: string, width = 100): string => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(/\s+/).filter((w) => w !== "")) {
    if (line !== "" && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line)
      line = word
    } else line = line === "" ? word : `${line} ${word}`
  }
  if (line !== "") lines.push(indent + line)
  return lines.join("\n")
}

export const helpPage = (command: CommandSpec): string => {
  const name = commandName(command)
  const sections: Array<string> = [`${name} ${VERSION}${command.description !== "" ? ` — ${command.description}` : ""}`]
  if (command.subcommands.length > 0) {
    sections.push(`USAGE\n  $ ${name} <command> [options]`)
    sections.push(
      "COMMANDS\n" +
        command.subcommands.map((c) => `  ${commandName(c)}\n${wrap(c.description, "      ")}`).join("\n")
    )
  } else {
    sections.push(`USAGE\n${wrap(["$", name, ...command.options.map(optionUsage), ...command.args.map(argUsage)].join(" "), "  ")}`)
  }
  if (command.args.length > 0) {
    sections.push("ARGUMENTS\n" + command.args.map((a) => `  ${argUsage(a)}\n${wrap(a.description, "      ")}`).join("\n"))
  }
  if (command.options.length > 0) {
    sections.push(
      "OPTIONS\n" +
        command.options
          .map((o) => `  ${[o.names.slice(1), o.names[0]].flat().join(", ")}${o.placeholder !== undefined ? ` ${o.placeholder}` : ""}\n${wrap(o.description, "      ")}`)
          .join("\n")
    )
  }
  return sections.join("\n\n") + "\n"
}
