// broker_management's settings (etc/plugins/broker_management.conf).
import Joi from 'joi'
import { listenOnSchema } from '../../lib/plugin-kit/index.js'

export { listenOn } from '../../lib/plugin-kit/index.js'

export interface ManagementConfig {
  /** `<port>` or `<address>:<port>` */
  'management.listener.http': string
  /** reported in the listener listing (Node.js accepts on one event loop) */
  'management.listener.http.acceptors': number
  /** connections over this are dropped */
  'management.listener.http.max_clients': number
  /** `<port>` or `<address>:<port>`; unset: no HTTPS listener */
  'management.listener.https'?: string
  /** PEM files of the HTTPS listener, relative to the install root */
  'management.listener.https.certfile': string
  'management.listener.https.keyfile': string
  'management.listener.https.acceptors': number
  'management.listener.https.max_clients': number
  'management.max_row_limit': number
  /** failed logins allowed per source address per minute, then 429; 0: no limit */
  'management.login_rate': number
  'management.default_application.id': string
  'management.default_application.secret': string
  'dashboard.default_user.login': string
  'dashboard.default_user.password': string
}

export const schema = Joi.object<ManagementConfig>({
  'management.listener.http': listenOnSchema().default('8080'),
  'management.listener.http.acceptors': Joi.number().integer().min(1).default(2),
  'management.listener.http.max_clients': Joi.number().integer().min(1).default(512),
  'management.listener.https': listenOnSchema(),
  'management.listener.https.certfile': Joi.string().min(1).default('etc/certs/cert.pem'),
  'management.listener.https.keyfile': Joi.string().min(1).default('etc/certs/key.pem'),
  'management.listener.https.acceptors': Joi.number().integer().min(1).default(2),
  'management.listener.https.max_clients': Joi.number().integer().min(1).default(512),
  'management.max_row_limit': Joi.number().integer().min(1).default(10000),
  'management.login_rate': Joi.number().integer().min(0).default(20),
  'management.default_application.id': Joi.string().min(1).default('admin'),
  'management.default_application.secret': Joi.string().min(1).default('public'),
  'dashboard.default_user.login': Joi.string().min(1).default('admin'),
  'dashboard.default_user.password': Joi.string().min(1).default('public')
})
