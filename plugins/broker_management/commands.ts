// The broker_ctl commands this plugin adds (EMQ X 3.x): `mgmt` for the
// applications of the v3 API, `admins` for the administrator users.
import { CtlError, output, usageError, type CtlCommand } from '../../lib/plugin-kit/admin.js'
import { newSecret, type App, type Apps } from './apps.js'
import type { Users } from './users.js'

// no secrets: only their hashes are kept, and `mgmt insert` shows a new one once
function appLine (app: App): string {
  return `app_id: ${app.app_id}, name: ${app.name}, desc: ${app.desc}, status: ${String(app.status)}, expired: ${String(app.expired)}`
}

export function mgmtCommand (apps: Apps): CtlCommand {
  return {
    name: 'mgmt',
    usage: [
      ['mgmt list', 'List Applications'],
      ['mgmt insert <AppId> <Name>', 'Add Application of REST API'],
      ['mgmt update <AppId> <status>', 'Update Application of REST API (status true or false)'],
      ['mgmt lookup <AppId>', 'Get Application of REST API'],
      ['mgmt delete <AppId>', 'Delete Application of REST API']
    ],
    run: async ([sub, ...args]) => {
      const [appId, value] = args
      if (sub === 'list' && args.length === 0) {
        const list = await apps.list()
        return output(list.map(appLine).join('\n'), list)
      }
      if (sub === 'insert' && args.length === 2) {
        if (await apps.get(appId) !== undefined) throw new CtlError('Error: already existed')
        const secret = newSecret()
        await apps.add({ app_id: appId, name: value, desc: '', status: true, expired: 'undefined' }, secret)
        return output(`AppSecret: ${secret}`, { app_id: appId, secret })
      }
      if (sub === 'update' && args.length === 2) {
        if (value !== 'true' && value !== 'false') throw usageError('status must be true or false')
        if (!await apps.update(appId, { status: value === 'true' })) throw new CtlError('Error: app not found')
        return output('update successfully.', { app_id: appId, status: value === 'true' })
      }
      if (sub === 'lookup' && args.length === 1) {
        const app = await apps.get(appId)
        if (app === undefined) throw new CtlError('Not Found.')
        const { app_id: id, name, desc, status, expired } = app
        return output(`app_id: ${id}\nname: ${name}\ndesc: ${desc}\nstatus: ${String(status)}\nexpired: ${String(expired)}`, app)
      }
      if (sub === 'delete' && args.length === 1) {
        if (!await apps.remove(appId)) throw new CtlError('Error: app not found')
        return output('ok', { app_id: appId, deleted: true })
      }
      throw usageError(`bad arguments: ${[sub, ...args].join(' ')}`)
    }
  }
}

export function adminsCommand (users: Users): CtlCommand {
  return {
    name: 'admins',
    usage: [
      ['admins add <Username> <Password> [<Tags>]', 'Add an administrator user (management API v2, dashboard)'],
      ['admins passwd <Username> <Password>', 'Reset the password of an administrator user'],
      ['admins del <Username>', 'Delete an administrator user']
    ],
    run: async ([sub, ...args]) => {
      const [username, password, tags = ''] = args
      if (sub === 'add' && (args.length === 2 || args.length === 3)) {
        if (username === '' || password === '') throw usageError('Error: user name and password must not be empty')
        if (await users.get(username) !== undefined) throw new CtlError(`Error: user ${username} already exists`)
        await users.add(username, password, tags)
        return output('ok', { username, tags })
      }
      if (sub === 'passwd' && args.length === 2) {
        if (password === '') throw usageError('Error: the password must not be empty')
        if (await users.get(username) === undefined) throw new CtlError(`Error: no user ${username}`)
        await users.setPassword(username, password)
        return output('ok', { username })
      }
      if (sub === 'del' && args.length === 1) {
        if (username === users.defaultUser.login) throw new CtlError('Error: the admin user cannot be deleted')
        if (!await users.remove(username)) throw new CtlError(`Error: no user ${username}`)
        return output('ok', { username, deleted: true })
      }
      throw usageError(`bad arguments: ${[sub, ...args].join(' ')}`)
    }
  }
}
