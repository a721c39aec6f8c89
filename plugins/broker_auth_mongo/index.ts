// broker_auth_mongo: authentication, superuser and ACL from MongoDB (EMQ X
// 3.x emqx_auth_mongo), with the official driver. See README.md.
import { backendAuthenticator, backendGuard, definePlugin, isTrue, passwordChecker, type PasswordChecker } from '../../lib/plugin-kit/index.js'
import { mongoAclChecker } from './acl.js'
import { MongoConnection, serversText } from './connection.js'
import { aclDocuments, findUser, superField, type AclQuery, type AuthQuery, type SuperQuery } from './queries.js'
import { aclSelectors, schema, type AuthMongoConfig } from './settings.js'

export { schema, type AuthMongoConfig } from './settings.js'

const NAME = 'broker_auth_mongo'

/** A document without a password field stores '' here: it never matches, even an empty password. */
function neverEmpty (check: PasswordChecker): PasswordChecker {
  return async (password, stored, salt) => stored !== '' && await check(password, stored, salt)
}

export default definePlugin<AuthMongoConfig>({
  name: NAME,
  version: '0.1.0',
  description: 'Authentication, superuser and ACL from MongoDB',
  schema,
  async load (ctx) {
    const config = ctx.config
    const connection = new MongoConnection(config)
    const server = `MongoDB ${serversText(config)}`
    const guard = backendGuard(ctx, server, config['auth.mongo.query_timeout'], async () => await connection.close())

    const auth: AuthQuery = {
      collection: config['auth.mongo.auth_query.collection'],
      fields: config['auth.mongo.auth_query.password_field'],
      selector: config['auth.mongo.auth_query.selector']
    }
    const superQuery: SuperQuery | undefined = config['auth.mongo.super_query']
      ? { collection: config['auth.mongo.super_query.collection'], field: config['auth.mongo.super_query.super_field'], selector: config['auth.mongo.super_query.selector'] }
      : undefined
    ctx.hooks.add('client.authenticate', backendAuthenticator({
      guard,
      checkPassword: neverEmpty(passwordChecker(config['auth.mongo.auth_query.password_hash'])),
      queries: {
        findUser: async (values) => await connection.run(async (db) => await findUser(db, auth, values)),
        isSuperuser: superQuery === undefined ? undefined : async (values) => isTrue(await connection.run(async (db) => await superField(db, superQuery, values)))
      },
      unavailable: config['auth.mongo.unavailable.auth'],
      logger: ctx.logger
    }))

    if (config['auth.mongo.acl_query']) {
      const acl: AclQuery = { collection: config['auth.mongo.acl_query.collection'], selectors: aclSelectors(config) }
      ctx.hooks.add('client.check_acl', mongoAclChecker({
        guard,
        documents: async (values) => await connection.run(async (db) => await aclDocuments(db, acl, values)),
        unavailable: config['auth.mongo.unavailable.acl'],
        logger: ctx.logger
      }))
    }

    // connect now, so a server that is down is told (log, alarm) at start, not at the first CONNECT
    void guard.run(async () => await connection.connect())
    ctx.logger.info({ server, type: config['auth.mongo.type'], database: config['auth.mongo.database'] }, 'MongoDB authentication ready')
  }
})
