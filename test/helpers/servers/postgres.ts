// Debian's PostgreSQL (the newest installed major version) for tests: initdb in a temporary folder, `postgres`
// in the foreground on 127.0.0.1 and a free port (socket in the folder),
// scram-sha-256 password authentication for every user. PostgreSQL refuses to
// run as root, so when the tests run as root the harness runs it as the
// unprivileged system user `brokertest` (created once with useradd).
// Also exports `startAs`, which mariadb.ts uses to run mariadbd the same way.
import { execFile } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { chown, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { freePort, tempDir } from '../broker.js'
import { killProcess, startProcess, stopProcess, type ServerProcess } from './process.js'

const run = promisify(execFile)
/** `/usr/lib/postgresql/<major>/bin` of the newest installed version (Debian 12 ships 15) */
const BIN = join('/usr/lib/postgresql', readdirSync('/usr/lib/postgresql').filter((v) => /^\d+$/.test(v)).sort((x, y) => Number(y) - Number(x))[0] ?? '15', 'bin')
const TEST_USER = 'brokertest'


export interface RunAs { uid: number, gid: number }

/** The user servers run as: the current one, or `brokertest` when running as root. */
export async function serverUser (): Promise<RunAs | undefined> {
  if (process.getuid?.() !== 0) return undefined
  const id = async (flag: string): Promise<number> => Number((await run('id', [flag, TEST_USER])).stdout.trim())
  try {
    return { uid: await id('-u'), gid: await id('-g') }
  } catch {
    try {
      await run('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', TEST_USER])
    } catch (err) {
      if (!/already exists/.test(String((err as { stderr?: string }).stderr))) throw err
    }
    return { uid: await id('-u'), gid: await id('-g') }
  }
}

/** A temporary folder the server user owns. */
export async function serverDir (prefix: string, user: RunAs | undefined): Promise<string> {
  const dir = await tempDir(prefix)
  if (user !== undefined) await chown(dir, user.uid, user.gid)
  return dir
}

/** Runs a command as `user` to its end; rejects with its output when it fails. */
export async function runAs (user: RunAs | undefined, command: string, args: string[]): Promise<string> {
  const { stdout } = await run(command, args, { ...(user ?? {}), cwd: '/', maxBuffer: 16 * 1024 * 1024 })
  return stdout
}

/** Spawns a server as `user` (see ./process.ts). */
export async function startAs (user: RunAs | undefined, command: string, args: string[], ready: RegExp, timeoutMs = 30000): Promise<ServerProcess> {
  return await startProcess(command, args, ready, timeoutMs, { cwd: '/', ...(user ?? {}) })
}

export interface SqlServer {
  port: number
  dir: string
  /** the database and the login the plugin uses */
  database: string
  user: string
  password: string
  readonly running: boolean
  /** runs SQL (several statements allowed) as the administrator in `database` */
  sql: (text: string) => Promise<Array<Record<string, unknown>>>
  /** runs the SQL of a file (e.g. the plugin's schema.sql) */
  seed: (file: string) => Promise<void>
  stop: () => Promise<void>
  kill: () => Promise<void>
  /** starts it again on the same port and folder (after stop or kill) */
  restart: () => Promise<void>
  /** stops it and removes the folder */
  close: () => Promise<void>
}

const ADMIN_PASSWORD = 'admin-secret'

/** After a kill -9 the old server's children may hold its lock for a moment: try a few times. */
export async function retried (start: () => Promise<void>, attempts = 10): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      return await start()
    } catch (err) {
      if (i >= attempts) throw err
      await new Promise((resolve) => setTimeout(resolve, 300))
    }
  }
}

export async function startPostgres (options: { database?: string, user?: string, password?: string } = {}): Promise<SqlServer> {
  const database = options.database ?? 'mqtt'
  const user = options.user ?? 'mqtt'
  const password = options.password ?? 'mqtt-secret'
  const runAsUser = await serverUser()
  const dir = await serverDir('pg-test-', runAsUser)
  const data = join(dir, 'data')
  const port = await freePort()
  let proc: ServerProcess | undefined
  const start = async (): Promise<void> => {
    proc = await startAs(runAsUser, join(BIN, 'postgres'), ['-D', data, '-p', String(port), '-h', '127.0.0.1', '-k', dir, '-c', 'fsync=off', '-c', 'max_connections=300'],
      /database system is ready to accept connections/)
  }
  const admin = async <T>(db: string, body: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password: ADMIN_PASSWORD, database: db })
    await client.connect()
    try {
      return await body(client)
    } finally {
      await client.end()
    }
  }
  try {
    const pwfile = join(dir, 'pwfile')
    await writeFile(pwfile, ADMIN_PASSWORD + '\n')
    if (runAsUser !== undefined) await chown(pwfile, runAsUser.uid, runAsUser.gid)
    await runAs(runAsUser, join(BIN, 'initdb'), ['-D', data, '-U', 'postgres', '--pwfile', pwfile, '--auth=scram-sha-256', '-E', 'UTF8', '--no-sync'])
    await start()
    await admin('postgres', async (client) => {
      await client.query(`create role ${user} login password '${password}'`)
      await client.query(`create database ${database} owner ${user}`)
    })
  } catch (err) {
    await stopProcess(proc)
    await rm(dir, { recursive: true, force: true })
    throw err
  }
  const sql = async (text: string): Promise<Array<Record<string, unknown>>> => await admin(database, async (client) => {
    const result = await client.query(text) as pg.QueryResult | pg.QueryResult[]
    const last = Array.isArray(result) ? result.at(-1) : result
    return (last?.rows ?? []) as Array<Record<string, unknown>>
  })
  return {
    port,
    dir,
    database,
    user,
    password,
    get running () { return proc !== undefined && proc.child.exitCode === null && proc.child.signalCode === null },
    sql,
    seed: async (file) => {
      await sql(`set role ${user};\n` + await readFile(file, 'utf8'))
    },
    stop: async () => { await stopProcess(proc) },
    kill: async () => { await killProcess(proc) },
    restart: async () => {
      await stopProcess(proc)
      await retried(start)
    },
    close: async () => {
      await stopProcess(proc)
      await rm(dir, { recursive: true, force: true })
    }
  }
}
