/**
 * The one table `npm run bench` prints and writes to bench/RESULTS.md: every figure with the floor
 * it was measured against in the same run (where it has one), the ratio, the target and whether the
 * target was met.
 */
import * as Os from "node:os"

export interface Row {
  /** e.g. `stream-5000 wall`. */
  readonly figure: string
  readonly value: number
  readonly unit: string
  /** The floor measured in the same run, in the same unit. */
  readonly floor?: { readonly value: number; readonly label: string }
  /** Human text, e.g. `≤ 2× floor`. */
  readonly target?: string
  /** Whether the target was met; absent when the row has no target. */
  readonly met?: boolean
  readonly note?: string
}

/** A figure whose target is a multiple of its floor. */
export const againstFloor = (
  figure: string,
  value: number,
  unit: string,
  floor: { readonly value: number; readonly label: string },
  factor: number
): Row => ({ figure, value, unit, floor, target: `≤ ${factor}× floor`, met: value <= factor * floor.value })

const format = (value: number, unit: string): string => {
  if (!Number.isFinite(value)) return "n/a"
  if (unit === "") return String(Math.round(value))
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2
  return `${value.toLocaleString("en", { maximumFractionDigits: digits, minimumFractionDigits: digits })} ${unit}`
}

const cells = (row: Row): ReadonlyArray<string> => [
  row.figure,
  format(row.value, row.unit),
  row.floor === undefined ? "" : `${format(row.floor.value, row.unit)} (${row.floor.label})`,
  row.floor === undefined || row.floor.value === 0 ? "" : `${(row.value / row.floor.value).toFixed(2)}×`,
  row.target ?? "",
  row.met === undefined ? "" : row.met ? "yes" : "**no**",
  row.note ?? ""
]

const HEADER = ["figure", "value", "floor", "ratio", "target", "met", "note"]

export const markdownTable = (rows: ReadonlyArray<Row>): string => {
  const lines = [HEADER, HEADER.map(() => "---"), ...rows.map(cells)]
  return lines.map((line) => `| ${line.map((c) => c.replaceAll("|", "\\|")).join(" | ")} |`).join("\n")
}

/** The machine a run was measured on: what RESULTS.md records with its figures. */
export const machine = (): string => {
  const cpus = Os.cpus()
  return [
    `- CPU: ${cpus[0]?.model ?? "unknown"} × ${cpus.length} (load average at the start: ${Os.loadavg().map((l) => l.toFixed(2)).join(", ")})`,
    `- Node ${process.version} on ${Os.type()} ${Os.release()} (${Os.arch()}), ${Math.round(Os.totalmem() / 2 ** 30)} GB RAM`,
    `- Date: ${new Date().toISOString()}`
  ].join("\n")
}
