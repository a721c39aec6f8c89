// The HTTPS management listener: the same routes over TLS; a missing certificate file fails the load.
import { readFile } from 'node:fs/promises'
import { request } from 'node:https'
import { join } from 'node:path'
import t from 'tap'
import { INSTALL_ROOT, createLogger, type PluginContext } from '../../../lib/plugin-kit/testing.js'
import { freePort } from '../../../test/helpers/broker.js'
import plugin, { schema, type ManagementConfig } from '../index.js'
import { DEFAULT_AUTH, startApiNode } from './api.js'

const ca = await readFile(join(INSTALL_ROOT, 'etc/certs/cacert.pem'))

/** GET over HTTPS, trusting the demo CA only; bounded at 5 s. */
async function httpsGet (port: number, path: string): Promise<{ status: number, body: unknown }> {
  return await new Promise((resolve, reject) => {
    const req = request({ host: 'localhost', port, path, method: 'GET', ca, timeout: 5000, headers: { authorization: `Basic ${Buffer.from(DEFAULT_AUTH).toString('base64')}` } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }))
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(new Error('HTTPS request timed out')))
    req.on('error', reject)
    req.end()
  })
}

t.test('with management.listener.https set, the API answers over TLS as over HTTP', async (t) => {
  const httpsPort = await freePort()
  // the default certfile/keyfile (etc/certs/cert.pem, key.pem, relative to the install root)
  const api = await startApiNode({}, { 'management.listener.https': `127.0.0.1:${httpsPort}` })
  t.teardown(async () => await api.stop())
  const overHttp = await api.call('GET', '/')
  t.equal(overHttp.status, 200)
  const overHttps = await httpsGet(httpsPort, '/api/v3/')
  t.equal(overHttps.status, 200)
  t.same(overHttps.body, overHttp.body)
  t.ok((overHttps.body as unknown[]).length > 10, 'the full operation list')
  const node = api.broker.node.name
  t.same((await httpsGet(httpsPort, `/api/v3/nodes/${node}/listeners`)).body, (await api.call('GET', `/nodes/${node}/listeners`)).body)
  t.equal((await httpsGet(httpsPort, '/api/v3/nodes/other@host')).status, 404)
})

t.test('without it, there is no HTTPS listener', async (t) => {
  const config = schema.validate({}).value as ManagementConfig
  t.equal(config['management.listener.https'], undefined)
  t.equal(config['management.listener.https.certfile'], 'etc/certs/cert.pem')
  t.equal(config['management.listener.https.keyfile'], 'etc/certs/key.pem')
})

t.test('a missing certificate or key file fails the load, naming the setting and the path', async (t) => {
  const port = await freePort()
  const base = schema.validate({ 'management.listener.http': `127.0.0.1:${port}`, 'management.listener.https': `127.0.0.1:${await freePort()}` }).value as ManagementConfig
  const context = (config: ManagementConfig): PluginContext<ManagementConfig> =>
    ({ name: 'broker_management', config, root: INSTALL_ROOT, logger: createLogger('error', false) }) as unknown as PluginContext<ManagementConfig>
  await t.rejects(async () => await plugin.load(context({ ...base, 'management.listener.https.certfile': 'etc/certs/no-such-cert.pem' })),
    { message: new RegExp(`^management\\.listener\\.https\\.certfile: cannot read ${join(INSTALL_ROOT, 'etc/certs/no-such-cert.pem').replace(/[.]/g, '\\.')}`) })
  await t.rejects(async () => await plugin.load(context({ ...base, 'management.listener.https.keyfile': '/nowhere/key.pem' })),
    { message: /^management\.listener\.https\.keyfile: cannot read \/nowhere\/key\.pem/ })
  // nothing was left listening on the HTTP port
  await t.rejects(fetch(`http://127.0.0.1:${port}/api/v3/`, { signal: AbortSignal.timeout(5000) }))
})
