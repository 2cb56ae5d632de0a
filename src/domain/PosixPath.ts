/**
 * POSIX path arithmetic on strings, so the domain stays free of Node: `resolve` against an absolute
 * base, `relative` between two absolute paths. Same answers as `node:path` for absolute inputs
 * (test/domain/PosixPath.test.ts compares them); the file system is never consulted.
 */

export const isAbsolute = (path: string): boolean => path.startsWith("/")

/** `.` and empty segments dropped, `..` applied (never above the root); always absolute for an absolute input. */
export const normalize = (path: string): string => {
  const out: Array<string> = []
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue
    if (segment === "..") out.pop()
    else out.push(segment)
  }
  return `/${out.join("/")}`
}

/** `path` against the absolute `base`; an absolute `path` ignores the base. */
export const resolve = (base: string, path: string): string => normalize(isAbsolute(path) ? path : `${base}/${path}`)

/** The way from `from` to `to` (both absolute): "" for the same path, `..` segments to leave `from`. */
export const relative = (from: string, to: string): string => {
  const a = normalize(from).split("/").filter((s) => s !== "")
  const b = normalize(to).split("/").filter((s) => s !== "")
  let common = 0
  while (common < a.length && common < b.length && a[common] === b[common]) common++
  return [...a.slice(common).map(() => ".."), ...b.slice(common)].join("/")
}
