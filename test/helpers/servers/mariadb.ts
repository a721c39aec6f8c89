// Debian's MariaDB for tests: mariadb-install-db into a temporary folder,
// `mariadbd` in the foreground on 127.0.0.1 and a free port (socket in the
// folder), the grant tables on: the plugin logs in as a real user with a
// password. As root, it runs as the unprivileged `brokertest` user (see
// postgres.ts).
import { rm, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import mysql from 'mysql2/promise'
import { freePort } from '../broker.js'
import { killProcess, stopProcess, type ServerProcess } from './process.js'
import { retried, runAs, serverDir, serverUser, startAs, type SqlServer } from './postgres.js'

export type { SqlServer } from './postgres.js'

const ADMIN_PASSWORD = 'admin-secret'

export async function startMariadb (options: { database?: string, user?: string, password?: string } = {}): Promise<SqlServer> {
  const database = options.database ?? 'mqtt'
  const user = options.user ?? 'mqtt'
  const password = options.password ?? 'mqtt-secret'
  const runAsUser = await serverUser()
  const dir = await serverDir('mariadb-test-', runAsUser)
  const data = join(dir, 'data')
  const port = await freePort()
  // innodb-flush-log-at-trx-commit=2: a commit reaches the OS before it returns, so rows survive kill -9 (not a machine crash)
  // --tmpdir: its own, not /tmp, since a mariadbd deletes every `#sql*` file of its tmpdir as it starts, the temporary
  // tables of another server's mariadb-install-db too (which then fails: "Could not remove temporary table") when
  // two test files start MariaDB at once
  const own = [`--tmpdir=${dir}`]
  const args = [
    '--no-defaults', `--datadir=${data}`, ...own, `--socket=${join(dir, 'mysqld.sock')}`, `--pid-file=${join(dir, 'mysqld.pid')}`,
    '--bind-address=127.0.0.1', `--port=${port}`, '--skip-name-resolve', '--innodb-buffer-pool-size=16M',
    '--innodb-log-file-size=8M', '--innodb-flush-log-at-trx-commit=2', '--max-connections=300', '--skip-log-bin'
  ]
  let proc: ServerProcess | undefined
  const start = async (): Promise<void> => {
    proc = await startAs(runAsUser, '/usr/sbin/mariadbd', args, /ready for connections/)
  }
  const admin = async <T>(body: (connection: mysql.Connection) => Promise<T>, db?: string): Promise<T> => {
    const connection = await mysql.createConnection({ host: '127.0.0.1', port, user: 'root', password: ADMIN_PASSWORD, database: db, multipleStatements: true })
    try {
      return await body(connection)
    } finally {
      await connection.end()
    }
  }
  try {
    await runAs(runAsUser, '/usr/bin/mariadb-install-db', ['--no-defaults', `--datadir=${data}`, ...own, '--auth-root-authentication-method=normal', '--skip-test-db', '--skip-name-resolve'])
    await start()
    // a fresh install's root has no password and may log in from localhost only: give it one first
    const first = await mysql.createConnection({ socketPath: join(dir, 'mysqld.sock'), user: 'root' })
    try {
      await first.query(`alter user 'root'@'localhost' identified by '${ADMIN_PASSWORD}'`)
      await first.query(`create or replace user 'root'@'127.0.0.1' identified by '${ADMIN_PASSWORD}'`)
      await first.query("grant all on *.* to 'root'@'127.0.0.1' with grant option")
      await first.query(`create database ${database}`)
      await first.query(`create user '${user}'@'127.0.0.1' identified by '${password}'`)
      await first.query(`grant all on ${database}.* to '${user}'@'127.0.0.1'`)
    } finally {
      await first.end()
    }
  } catch (err) {
    await stopProcess(proc)
    await rm(dir, { recursive: true, force: true })
    throw err
  }
  const sql = async (text: string): Promise<Array<Record<string, unknown>>> => await admin(async (connection) => {
    const [result] = await connection.query(text)
    const sets = Array.isArray(result) ? result : [result]
    const rows = Array.isArray(sets[0]) ? sets.filter(Array.isArray).at(-1) : sets
    return (rows ?? []) as Array<Record<string, unknown>>
  }, database)
  return {
    port,
    dir,
    database,
    user,
    password,
    get running () { return proc !== undefined && proc.child.exitCode === null && proc.child.signalCode === null },
    sql,
    seed: async (file) => { await sql(await readFile(file, 'utf8')) },
    stop: async () => { await stopProcess(proc, 15000) },
    kill: async () => { await killProcess(proc) },
    restart: async () => {
      await stopProcess(proc, 15000)
      await retried(start)
    },
    close: async () => {
      await stopProcess(proc, 15000)
      await rm(dir, { recursive: true, force: true })
    }
  }
}
