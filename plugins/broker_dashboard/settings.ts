// broker_dashboard's settings (etc/plugins/broker_dashboard.conf).
import Joi from 'joi'
import { durationSetting, listenOnSchema } from '../../lib/plugin-kit/index.js'

export { listenOn } from '../../lib/plugin-kit/index.js'

const HOUR_MS = 3_600_000

export interface DashboardConfig {
  /** `<port>` or `<address>:<port>` */
  'dashboard.listener.http': string
  /** reported in the listener listing (Node.js accepts on one event loop) */
  'dashboard.listener.http.acceptors': number
  /** connections over this are dropped */
  'dashboard.listener.http.max_clients': number
  /** `<port>` or `<address>:<port>`; unset: no HTTPS listener */
  'dashboard.listener.https'?: string
  /** PEM files of the HTTPS listener, relative to the install root; `cacertfile` optional (the chain sent with the certificate) */
  'dashboard.listener.https.certfile': string
  'dashboard.listener.https.keyfile': string
  'dashboard.listener.https.cacertfile'?: string
  'dashboard.listener.https.acceptors': number
  'dashboard.listener.https.max_clients': number
  /** the built console (index.html, assets/), relative to the install root */
  'dashboard.docroot': string
  /** ms between two samples of every node's rates and counts (the overview's charts) */
  'dashboard.sample_interval': number
  /** ms a session lasts without a request */
  'dashboard.session_timeout': number
  /** the shortest new password `PUT /api/me/password` accepts */
  'dashboard.password_min_length': number
}

export const schema = Joi.object<DashboardConfig>({
  'dashboard.listener.http': listenOnSchema().default('18083'),
  'dashboard.listener.http.acceptors': Joi.number().integer().min(1).default(2),
  'dashboard.listener.http.max_clients': Joi.number().integer().min(1).default(512),
  'dashboard.listener.https': listenOnSchema(),
  'dashboard.listener.https.certfile': Joi.string().min(1).default('etc/certs/cert.pem'),
  'dashboard.listener.https.keyfile': Joi.string().min(1).default('etc/certs/key.pem'),
  'dashboard.listener.https.cacertfile': Joi.string().min(1),
  'dashboard.listener.https.acceptors': Joi.number().integer().min(1).default(2),
  'dashboard.listener.https.max_clients': Joi.number().integer().min(1).default(512),
  'dashboard.docroot': Joi.string().min(1).default('plugins/broker_dashboard/ui/dist'),
  'dashboard.sample_interval': durationSetting(10_000, 1000, { ms: 600_000, said: '10 minutes (a chart of the last hour needs a few points)' }),
  'dashboard.session_timeout': durationSetting(30 * 60_000, 60_000, { ms: 24 * HOUR_MS, said: 'a day' }),
  'dashboard.password_min_length': Joi.number().integer().min(1).max(128).default(8)
})
