// Reads a TLS listener's key, certificate and CA files (SPEC §8 listener.ssl.*).
import { readFile } from 'node:fs/promises'
import { isAbsolute, resolve } from 'node:path'
import type { TlsOptions } from 'node:tls'
import { ConfigError } from '../config/parse.js'
import type { Config } from '../config/store.js'

type TlsPrefix = 'listener.ssl.external' | 'listener.wss.external'

export async function tlsOptions (config: Config, prefix: TlsPrefix, root: string): Promise<TlsOptions> {
  const read = async (key: `${TlsPrefix}.${'keyfile' | 'certfile' | 'cacertfile'}`): Promise<Buffer> => {
    const file = config.get(key)
    const path = isAbsolute(file) ? file : resolve(root, file)
    try {
      return await readFile(path)
    } catch (err) {
      throw new ConfigError(config.origin(key), `${key}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
    }
  }
  const verifyPeer = config.get(`${prefix}.verify`) === 'verify_peer'
  return {
    key: await read(`${prefix}.keyfile`),
    cert: await read(`${prefix}.certfile`),
    ca: verifyPeer ? await read(`${prefix}.cacertfile`) : undefined,
    requestCert: verifyPeer,
    rejectUnauthorized: verifyPeer && config.get(`${prefix}.fail_if_no_peer_cert`)
  }
}
