// Collections, indexes and example documents for broker_auth_mongo.
// Run with mongosh against the database of auth.mongo.database:
//   mongosh "mongodb://127.0.0.1:27017/mqtt" plugins/broker_auth_mongo/seed.js
// The example passwords are hashed with the default password_hash, sha256
// (hex of SHA-256 of the password): "public" for every example user.
/* global db */

db.createCollection('mqtt_user')
db.mqtt_user.createIndex({ username: 1 }, { unique: true })

db.createCollection('mqtt_acl')
db.mqtt_acl.createIndex({ username: 1 })
db.mqtt_acl.createIndex({ clientid: 1 })

const PUBLIC_SHA256 = 'efa1f375d76194fa51a3556a97e641e61685f914d446979da50a551a4333ffd7'

db.mqtt_user.insertMany([
  // a superuser: passes every ACL check
  { username: 'admin', password: PUBLIC_SHA256, is_superuser: true, created: new Date() },
  { username: 'sensor', password: PUBLIC_SHA256, is_superuser: false, created: new Date() },
  // with auth.mongo.auth_query.password_hash = salt,sha256 and
  // auth.mongo.auth_query.password_field = password,salt the salt field is
  // read too: password = hex(sha256(salt + password))
  { username: 'salted', password: 'f2ef7f9aedb2c3b5040bc16691a1177758a92ad91e1ee77770215a332bf6099f', salt: 'salt', is_superuser: false, created: new Date() }
])

db.mqtt_acl.insertMany([
  // the user may publish to its own telemetry topics and subscribe to its commands
  { username: 'sensor', clientid: 'sensor-1', publish: ['telemetry/%c/#'], subscribe: ['commands/%u/#'], pubsub: ['chat/sensors'] },
  // with auth.mongo.acl_query.selector.2 = username=$all: what every client may do
  { username: '$all', subscribe: ['broadcast/#'] }
])
