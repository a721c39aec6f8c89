// A cluster node in the test process (startBroker), joined through a
// redis-server the test started: the settings test/31, 45, 61 and 64 use.
import { startBroker, type TestBroker } from './broker.js'

export interface InProcessCluster { name: string, redisPort: number }

export async function inProcessNode ({ name, redisPort }: InProcessCluster, nodeName: string, settings: Record<string, string> = {}): Promise<TestBroker> {
  return await startBroker({
    'node.name': nodeName,
    'cluster.discovery': 'redis',
    'cluster.name': name,
    'cluster.redis.server': `127.0.0.1:${redisPort}`,
    'cluster.heartbeat_interval': '300ms',
    'cluster.rpc_timeout': '5s',
    ...settings
  })
}
