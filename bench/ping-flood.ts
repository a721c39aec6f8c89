// What a PINGREQ costs the broker: PING_CLIENTS idle raw clients (MQTT 3.1.1,
// keepalive 60) connect, then every one sends a PINGREQ in the same tick (as
// a fleet reconnected at once does), PING_ROUNDS times; per round, the broker
// process' CPU time (from /proc) divided by the PINGREQs, and the time until
// the last PINGRESP arrived. `node dist/bench/ping-flood.js`; BENCH_CPU_PROF=<dir>
// profiles the broker (a V8 .cpuprofile written when it exits).
import { RawClient } from './client.js'
import { inLanes } from './lanes.js'
import { cpuMs, Server } from './servers.js'
import { envNumber } from './env.js'
import { rerunWithOpenFiles } from './fd-limit.js'

const FD_HEADROOM = 200

async function main (): Promise<number> {
  const count = envNumber('PING_CLIENTS', 10_000, { integer: true })
  const rounds = envNumber('PING_ROUNDS', 5, { integer: true })
  const rerun = rerunWithOpenFiles(count + FD_HEADROOM)
  if (rerun !== null) return rerun
  const prof = process.env.BENCH_CPU_PROF
  const server = await Server.start('broker', { nodeArgs: prof !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [] })
  const clients: RawClient[] = []
  let answered = 0
  let allAnswered: (() => void) | null = null
  try {
    await inLanes(count, 100, async (i) => {
      clients.push(await RawClient.connect({
        port: server.port,
        clientId: `ping-${i}`,
        keepalive: 60,
        onPacket: (p) => { if (p.cmd === 'pingresp' && ++answered === count) allAnswered?.() }
      }))
    })
    for (let round = 1; round <= rounds; round++) {
      answered = 0
      const done = new Promise<void>((resolve) => { allAnswered = resolve })
      const cpu0 = cpuMs(server.pid)
      const t0 = performance.now()
      for (const c of clients) c.send({ cmd: 'pingreq' })
      await Promise.race([done, server.died])
      const wallMs = performance.now() - t0
      const cpu = cpuMs(server.pid) - cpu0
      process.stdout.write(`round ${round}: ${count} PINGREQs answered in ${wallMs.toFixed(0)} ms; broker CPU ${cpu.toFixed(0)} ms = ${(cpu * 1000 / count).toFixed(1)} µs per PINGREQ\n`)
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
  } finally {
    for (const c of clients) c.close()
    await server.stop()
  }
  return 0
}

process.exitCode = await main()
