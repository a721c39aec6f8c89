// @hapi/call ships no types; this is the part of its router the plugin routes use.
declare module '@hapi/call' {
  export class Router {
    add (config: { method: string, path: string }, route: unknown): void
    route (method: string, path: string): { params: Record<string, string>, route: unknown } | Error
  }
}
