// Reads a TLS listener's key, certificate and CA files (SPEC §8 listener.ssl.*).
import { readFile } from 'node:fs/promises'
import { isAbsolute, resolve } from 'node:path'
import type { TlsOptions } from 'node:tls'
import { ConfigError } from '../config/parse.js'
import type { Config } from '../config/store.js'

/** `prefix`: the listener's key, `listener.ssl.<name>` or `listener.wss.<name>`. */
export async function tlsOptions (config: Config, prefix: string, root: string): Promise<TlsOptions> {
  const read = async (file: 'keyfile' | 'certfile' | 'cacertfile'): Promise<Buffer> => {
    const key = `${prefix}.${file}`
    const value = config.value(key) as string
    const path = isAbsolute(value) ? value : resolve(root, value)
    try {
      return await readFile(path)
    } catch (err) {
      throw new ConfigError(config.origin(key), `${key}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
    }
  }
  const verifyPeer = config.value(`${prefix}.verify`) === 'verify_peer'
  return {
    key: await read('keyfile'),
    cert: await read('certfile'),
    ca: verifyPeer ? await read('cacertfile') : undefined,
    requestCert: verifyPeer,
    rejectUnauthorized: verifyPeer && config.value(`${prefix}.fail_if_no_peer_cert`) === true
  }
}
