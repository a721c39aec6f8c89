// broker_auth_http: authentication, superuser and ACL checks by an HTTP
// server (EMQ X 3.x emqx_auth_http). See README.md.
import { definePlugin } from '../../lib/plugin-kit/index.js'
import { FailureLog } from './failures.js'
import { aclChecker, authenticator, endpointsOf } from './handlers.js'
import { HttpClient } from './request.js'
import { schema, type AuthHttpConfig } from './settings.js'

export { describeSettings, schema, type AuthHttpConfig, type SettingItem } from './settings.js'

export default definePlugin<AuthHttpConfig>({
  name: 'broker_auth_http',
  version: '0.1.0',
  description: 'Authentication, superuser and ACL checks by HTTP requests',
  schema,
  load (ctx) {
    const config = ctx.config
    const client = new HttpClient({
      timeout: config['auth.http.request.timeout'],
      retryTimes: config['auth.http.request.retry_times'],
      retryInterval: config['auth.http.request.retry_interval'],
      retryBackoff: config['auth.http.request.retry_backoff'],
      poolSize: config['auth.http.pool_size']
    })
    ctx.onUnload(() => { client.close() })
    const endpoints = endpointsOf(config)
    const deps = { http: client, failures: new FailureLog(ctx.logger), logger: ctx.logger }
    ctx.hooks.add('client.authenticate', authenticator(deps, endpoints))
    if (endpoints.acl) ctx.hooks.add('client.check_acl', aclChecker(deps, endpoints.acl, endpoints.failure))
    ctx.logger.info({ auth: endpoints.auth.url, superuser: endpoints.superuser?.url, acl: endpoints.acl?.url, failure: endpoints.failure }, 'HTTP authentication ready')
  }
})
