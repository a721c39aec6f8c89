// Debian's slapd for tests: a temporary cn=config (mdb database, suffix
// dc=emqx,dc=io, rootdn cn=root,dc=emqx,dc=io / public), seeded with LDIF
// files by slapadd before it starts, listening on ldap://127.0.0.1:<free
// port>/ in the foreground (`-d 0`), so stop, kill -9 and restart on the
// same port and database are reliable.
import { execFile } from 'node:child_process'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort, tempDir } from '../broker.js'
import { killProcess, startProcess, stopProcess, type ServerProcess } from './process.js'

const run = promisify(execFile)
// Debian installs them in /usr/sbin, which is not on a non-root user's PATH
const SLAPD = '/usr/sbin/slapd'
const SLAPADD = '/usr/sbin/slapadd'

export const SUFFIX = 'dc=emqx,dc=io'
export const ROOT_DN = 'cn=root,dc=emqx,dc=io'
export const ROOT_PASSWORD = 'public'

export interface SlapdOptions {
  /** LDIF files added (slapadd) before the first start, in order */
  seed?: string[]
  /** reuse a port (default: a free one) */
  port?: number
}

export interface SlapdServer {
  port: number
  url: string
  dir: string
  readonly running: boolean
  /** ldapadd (as the root DN) of an LDIF file while it runs */
  add: (file: string) => Promise<void>
  /** ldapsearch (as the root DN) under the suffix; resolves with the LDIF output */
  search: (filter: string, ...attributes: string[]) => Promise<string>
  stop: () => Promise<void>
  kill: () => Promise<void>
  /** starts it again on the same port and database */
  restart: () => Promise<void>
  /** stops it and removes the folder */
  close: () => Promise<void>
}

function configLdif (dir: string): string {
  return `dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: ${dir}/slapd.pid

dn: cn=module{0},cn=config
objectClass: olcModuleList
cn: module{0}
olcModulePath: /usr/lib/ldap
olcModuleLoad: back_mdb

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

include: file:///etc/ldap/schema/core.ldif

include: file:///etc/ldap/schema/cosine.ldif

dn: olcDatabase={-1}frontend,cn=config
objectClass: olcDatabaseConfig
objectClass: olcFrontendConfig
olcDatabase: {-1}frontend

dn: olcDatabase={0}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {0}config
olcAccess: {0}to * by * none

dn: olcDatabase={1}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {1}mdb
olcDbDirectory: ${dir}/db
olcDbMaxSize: 67108864
olcSuffix: ${SUFFIX}
olcRootDN: ${ROOT_DN}
olcRootPW: ${ROOT_PASSWORD}
olcAccess: {0}to attrs=userPassword by self read by anonymous auth by * none
olcAccess: {1}to * by * read
`
}

export async function startSlapd (options: SlapdOptions = {}): Promise<SlapdServer> {
  const dir = await tempDir('slapd-test-')
  const port = options.port ?? await freePort()
  const url = `ldap://127.0.0.1:${port}`
  const confDir = join(dir, 'slapd.d')
  let proc: ServerProcess | undefined
  const start = async (): Promise<void> => {
    proc = await startProcess(SLAPD, ['-F', confDir, '-h', `${url}/`, '-d', '0'], port)
  }
  try {
    await mkdir(confDir)
    await mkdir(join(dir, 'db'))
    await writeFile(join(dir, 'config.ldif'), configLdif(dir))
    await run(SLAPADD, ['-n', '0', '-F', confDir, '-l', join(dir, 'config.ldif')])
    for (const file of options.seed ?? []) await run(SLAPADD, ['-n', '1', '-F', confDir, '-l', file])
    await start()
  } catch (err) {
    await stopProcess(proc)
    await rm(dir, { recursive: true, force: true })
    throw err
  }
  const auth = ['-x', '-H', url, '-D', ROOT_DN, '-w', ROOT_PASSWORD]
  return {
    port,
    url,
    dir,
    get running () { return proc !== undefined && proc.child.exitCode === null && proc.child.signalCode === null },
    add: async (file) => { await run('ldapadd', [...auth, '-f', file]) },
    search: async (filter, ...attributes) => (await run('ldapsearch', [...auth, '-LLL', '-b', SUFFIX, filter, ...attributes])).stdout,
    stop: async () => await stopProcess(proc),
    kill: async () => await killProcess(proc),
    restart: start,
    async close () {
      await stopProcess(proc)
      await rm(dir, { recursive: true, force: true })
    }
  }
}
