// What every page knows: who is signed in (and so whether changes are
// allowed), the node chosen in the header ('' = the whole cluster) and the
// nodes there are.
import { createContext } from 'preact'
import { useContext } from 'preact/hooks'
import type { Me } from './api.js'

export interface Session {
  me: Me
  /** an administrator may change things; a viewer only looks */
  canChange: boolean
  /** the chosen node's name, '' for every node */
  node: string
  nodes: string[]
  /** the node to ask when one must be named: the chosen one, else the first */
  someNode: string
  signOut: () => Promise<void>
}

export const SessionContext = createContext<Session | undefined>(undefined)

export function useSession (): Session {
  const session = useContext(SessionContext)
  if (session === undefined) throw new Error('no session')
  return session
}

/** The v3 path of a listing on the chosen node, or cluster-wide: `/connections/` or `/nodes/<n>/connections/`. */
export function scoped (session: Pick<Session, 'node'>, listing: string): string {
  return session.node === '' ? `/${listing}/` : `/nodes/${encodeURIComponent(session.node)}/${listing}/`
}
