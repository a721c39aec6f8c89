// One broker node: opens the store, builds the engine, opens the listeners;
// stops them in reverse order. Nothing else lives here.
import { isAbsolute, resolve } from 'node:path'
import type { Aedes, Client } from 'aedes'
import type { Level } from 'level'
import type { Config } from './config/store.js'
import { createEngine } from './engine/create.js'
import { engineClient } from './engine/internals.js'
import { Retainer } from './engine/retainer.js'
import { SessionQueues } from './engine/session-queue.js'
import { openStore, type AedesPersistence } from './engine/store.js'
import { createListeners, type Listener } from './listeners/index.js'
import type { Logger } from './log.js'

export interface NodeOptions {
  config: Config
  logger: Logger
  /** the install root that relative paths in the configuration are resolved against */
  root: string
}

export class BrokerNode {
  readonly startedAt = new Date()
  #stopping: Promise<void> | null = null

  private constructor (
    readonly config: Config,
    readonly logger: Logger,
    readonly engine: Aedes,
    readonly listeners: Listener[],
    readonly retainer: Retainer,
    readonly queues: SessionQueues,
    private readonly db: Level<string, Buffer>,
    private readonly persistence: AedesPersistence
  ) {}

  get name (): string {
    return this.config.get('node.name')
  }

  static async start ({ config, logger, root }: NodeOptions): Promise<BrokerNode> {
    const dataDir = resolvePath(root, config.get('node.data_dir'))
    const { db, persistence } = await openStore(dataDir)
    let engine: Aedes | undefined
    try {
      const retainer = new Retainer(config)
      await retainer.attach(persistence)
      const queues = new SessionQueues(config,
        (clientId) => engine !== undefined && engineClient(engine, clientId)?.closed === false,
        (clientId, packet) => engine?.emit('messageDropped', packet, { id: clientId }, 'queue_full'))
      await queues.attach(db, persistence)
      engine = await createEngine({ config, persistence })
      logEngineEvents(engine, logger)
      const handle = engine.handle
      const listeners = await createListeners(config, root, (stream, req) => handle(stream, req))
      const node = new BrokerNode(config, logger, engine, listeners, retainer, queues, db, persistence)
      try {
        for (const listener of listeners) {
          await listener.start()
          logger.info({ listener: listener.protocol, address: `${listener.address.host}:${listener.address.port}` }, 'listener started')
        }
      } catch (err) {
        await node.stop()
        throw err
      }
      logger.info({ node: node.name, dataDir }, 'broker node is running')
      return node
    } catch (err) {
      if (engine !== undefined && !engine.closed) await closeEngine(engine)
      if (db.status === 'open') await persistence.destroy()
      throw err
    }
  }

  /** Stops accepting, disconnects clients (v5: DISCONNECT 0x8B), then closes the store. */
  async stop (): Promise<void> {
    this.#stopping ??= this.#stop()
    return await this.#stopping
  }

  async #stop (): Promise<void> {
    const closing = this.listeners.map(async (listener) => await listener.stop())
    await closeEngine(this.engine)
    await Promise.all(closing)
    if (this.db.status === 'open') await this.persistence.destroy()
    this.logger.info({ node: this.name }, 'broker node stopped')
  }
}

async function closeEngine (engine: Aedes): Promise<void> {
  await new Promise<void>((resolve) => engine.close(() => resolve()))
}

function resolvePath (root: string, path: string): string {
  return isAbsolute(path) ? path : resolve(root, path)
}

function logEngineEvents (engine: Aedes, logger: Logger): void {
  engine.on('clientReady', (client: Client) => logger.debug({ clientId: client.id, version: client.version }, 'client connected'))
  engine.on('clientDisconnect', (client: Client) => logger.debug({ clientId: client.id }, 'client disconnected'))
  engine.on('clientError', (client: Client, err: Error) => logger.debug({ clientId: client.id, err: err.message }, 'client error'))
  engine.on('connectionError', (_client: Client, err: Error) => logger.debug({ err: err.message }, 'connection error'))
  const events: NodeJS.EventEmitter = engine
  events.on('error', (err: Error) => logger.error({ err }, 'engine error'))
}
