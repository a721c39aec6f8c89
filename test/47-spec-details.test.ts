// Details of the SPEC that issue 15 found missing (#6–#13): configuration key
// names and labels (§2.14, §6), the management listener in the listeners API
// (§2.10), session record counters (§2.3), cookie authentication (§5.2.1),
// status codes (§7.1), plugin_configs reset and validation (§4.5), cluster
// listings with a dead node, PBKDF2 with MD4 (§5.2.8).
import t from 'tap'
import { startApiNode } from '../plugins/broker_management/test/api.js'
import { connect, closeAll, nextMessages } from './helpers/mqtt.js'

type Item = Record<string, unknown>

t.test('#6 config: mqtt.broker.sys_interval (alias broker.sys_interval), integer, duration; retainer.max_payload_size 1048576', async (t) => {
  // the old name given at start sets the new key
  const api = await startApiNode({ 'broker.sys_interval': '1h' })
  t.teardown(api.stop)
  const listing = async (): Promise<Item[]> => ((await api.call('GET', '/configs/')).body as Array<{ config: Item[] }>)[0].config
  const item = async (key: string): Promise<Item | undefined> => (await listing()).find((i) => i.key === key)

  t.same(await item('mqtt.broker.sys_interval'), { key: 'mqtt.broker.sys_interval', value: '1h', datatpye: 'integer, duration', app: 'broker' })
  t.equal(await item('broker.sys_interval'), undefined, 'listed under the SPEC name only')
  t.same(await item('retainer.max_payload_size'), { key: 'retainer.max_payload_size', value: '1048576', datatpye: 'bytesize', app: 'broker_retainer' })

  // the SPEC name changes it at run time: $SYS statistics come every second
  const local = await connect(api.mqttUrl, { clientId: 'sys-watcher' })
  t.teardown(async () => await closeAll(local))
  await local.subscribeAsync(`$SYS/brokers/${api.broker.node.name}/stats/connections/count`)
  t.equal((await api.call('PUT', '/configs/broker', { body: { key: 'mqtt.broker.sys_interval', value: '1s' } })).status, 200)
  t.equal((await item('mqtt.broker.sys_interval'))?.value, '1s')
  t.equal((await nextMessages(local, 2, 10_000)).length, 2, 'two $SYS statistics within 10 s')

  // and the alias too
  t.equal((await api.call('PUT', '/configs/broker', { body: { key: 'broker.sys_interval', value: '2h' } })).status, 200)
  t.equal((await item('mqtt.broker.sys_interval'))?.value, '2h')
})
