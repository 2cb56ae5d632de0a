import { Data, Either } from "effect"
import * as Path from "./PosixPath.js"
import { PathOutsideWorkspace } from "./Errors.js"

/**
 * What a tool call locks. Read-only tools share the workspace; file writers lock one normalized
 * path; shell and unknown tools lock the whole workspace, because we cannot know what they touch.
 */
export type ResourceKey = Data.TaggedEnum<{
  Shared: {}
  Global: {}
  File: { readonly path: string }
}>
export const ResourceKey = Data.taggedEnum<ResourceKey>()

export const READ_ONLY_TOOLS: ReadonlySet<string> = new Set(["Read", "Grep", "Glob", "LS"])
export const FILE_WRITE_TOOLS: ReadonlySet<string> = new Set(["Write", "Edit"])

const PATH_KEYS: Readonly<Record<string, string>> = {
  Read: "file_path",
  Write: "file_path",
  Edit: "file_path",
  Glob: "path",
  Grep: "path",
  LS: "path"
}

export interface Confinement {
  /** The workspace root, already resolved through symlinks. */
  readonly workspace: string
  /** Extra roots the session's rules grant (already resolved). */
  readonly allowedRoots?: ReadonlyArray<string>
  /**
   * Resolves symlinks of the longest existing prefix of an absolute path (the caller's I/O).
   * Defaults to the identity, which keeps this module pure.
   */
  readonly realpath?: (absolute: string) => string
}

const isInside = (root: string, candidate: string): boolean => {
  const relative = Path.relative(root, candidate)
  return relative === "" || (!relative.startsWith("..") && !Path.isAbsolute(relative))
}

/** Resolve a tool path the way every tool and lock must see it, refusing what escapes the workspace. */
export const confinePath = (raw: string, confinement: Confinement): Either.Either<string, PathOutsideWorkspace> => {
  const absolute = Path.resolve(confinement.workspace, raw)
  const real = confinement.realpath?.(absolute) ?? absolute
  const roots = [confinement.workspace, ...(confinement.allowedRoots ?? [])]
  if (roots.some((root) => isInside(root, real))) return Either.right(real)
  return Either.left(
    new PathOutsideWorkspace({
      path: raw,
      workspace: confinement.workspace,
      message: real === absolute
        ? `${raw} is outside the workspace ${confinement.workspace}; add its directory to permissions.additionalDirectories to allow it`
        : `${raw} resolves to ${real} (through a symlink), outside the workspace ${confinement.workspace}`
    })
  )
}

const pathArgument = (toolName: string, args: unknown): string | undefined => {
  const key = PATH_KEYS[toolName]
  if (key === undefined || typeof args !== "object" || args === null) return undefined
  const value = (args as Record<string, unknown>)[key]
  return typeof value === "string" && value.length > 0 ? value : undefined
}

/**
 * The lock a call takes. `args` is the decoded argument object. A file tool without a usable
 * path takes the global lock (it will fail anyway, and conservatism costs only speed).
 */
export const resourceKey = (
  toolName: string,
  args: unknown,
  confinement: Confinement
): Either.Either<ResourceKey, PathOutsideWorkspace> => {
  const raw = pathArgument(toolName, args)
  if (READ_ONLY_TOOLS.has(toolName)) {
    return raw === undefined ? Either.right(ResourceKey.Shared()) : Either.map(confinePath(raw, confinement), () => ResourceKey.Shared())
  }
  if (FILE_WRITE_TOOLS.has(toolName)) {
    return raw === undefined
      ? Either.right(ResourceKey.Global())
      : Either.map(confinePath(raw, confinement), (path) => ResourceKey.File({ path }))
  }
  return Either.right(ResourceKey.Global())
}
