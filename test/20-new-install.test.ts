// A new install (no data/loaded_plugins yet) starts with the management API
// loaded, usable at once with the default application admin/public, the web
// console (broker_dashboard, its login admin/public), and the
// retainer (retained messages kept, as EMQ X ships emqx_retainer loaded) and the
// modules plugin (presence notices).
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { setsToLines } from '../lib/config/load.js'
import { Config } from '../lib/config/store.js'
import { createLogger } from '../lib/log.js'
import { BrokerNode } from '../lib/node.js'
import { INSTALL_ROOT } from '../lib/root.js'
import { freePort, tempDir } from './helpers/broker.js'
import { closeAll, connect, nextMessages } from './helpers/mqtt.js'

t.test('without data/loaded_plugins the node loads broker_management, broker_retainer, broker_modules and broker_dashboard', async (t) => {
  const dir = await tempDir()
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const etc = join(dir, 'etc')
  await mkdir(etc)
  const port = await freePort()
  await writeFile(join(etc, 'broker_management.conf'), `management.listener.http = 127.0.0.1:${port}\n`)
  const dashboardPort = await freePort()
  await writeFile(join(etc, 'broker_dashboard.conf'), `dashboard.listener.http = 127.0.0.1:${dashboardPort}\n`)
  const config = new Config(setsToLines([
    `node.data_dir=${dir}`, `plugins.etc_dir=${etc}`, 'listener.tcp.external=127.0.0.1:0',
    'listener.ssl.external=off', 'listener.ws.external=off', 'listener.wss.external=off'
  ]))
  const node = await BrokerNode.start({ config, logger: createLogger('error', false), root: INSTALL_ROOT })
  t.teardown(() => node.stop())
  t.equal(node.plugins.isActive('broker_management'), true)
  t.equal(node.plugins.isActive('broker_modules'), true)
  const res = await fetch(`http://127.0.0.1:${port}/api/v3/brokers/`, { headers: { authorization: `Basic ${Buffer.from('admin:public').toString('base64')}` } })
  t.equal(res.status, 200, 'the default application works at once')
  t.equal(node.plugins.isActive('broker_dashboard'), true)
  const login = await fetch(`http://127.0.0.1:${dashboardPort}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: 'public' }) })
  t.equal(login.status, 200, 'the console takes the default administrator at once')

  t.equal(node.plugins.isActive('broker_retainer'), true)
  const url = `mqtt://127.0.0.1:${node.listeners[0].address.port}`
  const pub = await connect(url, { clientId: 'new-pub' })
  await pub.publishAsync('new/kept', 'kept', { qos: 1, retain: true })
  const sub = await connect(url, { clientId: 'new-sub' })
  t.teardown(() => closeAll(pub, sub))
  const got = nextMessages(sub, 1)
  await sub.subscribeAsync('new/#')
  t.match(await got, [{ topic: 'new/kept', payload: 'kept', retain: true }], 'a retained message is kept for a later subscriber')
})
