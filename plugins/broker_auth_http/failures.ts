// Logs transport failures once per burst: the first failure of a URL is a
// warning naming the URL and the error, the rest of the burst is debug, and
// the first HTTP answer after it ends the burst with one info line.
import type { Logger } from '../../lib/plugin-kit/index.js'
import type { TransportError } from './request.js'

export class FailureLog {
  readonly #failing = new Set<string>()

  constructor (private readonly logger: Logger) {}

  failed (url: string, err: TransportError): void {
    if (this.#failing.has(url)) {
      this.logger.debug({ url, code: err.code }, 'HTTP auth request failed again')
      return
    }
    this.#failing.add(url)
    this.logger.warn({ url, code: err.code, error: err.message }, 'HTTP auth server unreachable; requests fail until it answers again')
  }

  answered (url: string): void {
    if (this.#failing.delete(url)) this.logger.info({ url }, 'HTTP auth server answers again')
  }
}
