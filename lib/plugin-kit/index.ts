// The plugin kit: the one module plugins import from the core (the lint
// refuses any other import of lib/ under plugins/). The contract, the hook
// types, broker_ctl command helpers, and what auth and ACL plugins share:
// query templates, password hashes, backend pools and their health, ACL rules.
export * from './contract.js'
export type { AclAccess, AuthenticateAnswer, AuthenticateRequest, CheckAclRequest, ClientInfo, ConnectInfo, Decision, EnhancedAuthAnswer, EnhancedAuthRequest, HookHandlers, HookName, MessageInfo, PublishAnswer, PublishMessage, SubscribeAnswer, SubscribeFilter } from '../hooks/types.js'
export { CtlError, output, usageError, type CtlCommand, type CtlOutput, type UsageLine } from '../ctl/command.js'
export type { Logger } from '../log.js'
export type { ListenerRecord } from '../service/operations.js'
export { parseDuration } from '../config/types.js'
export { compileTopicFilter, isLevelValue, topicMatches } from '../access/acl-match.js'
export { hashForStorage, verifyStored } from './hash/password-hash.js'
export { SourceFailures } from '../access/source-failures.js'
export * from './backend/acl-rules.js'
export * from './backend/guard.js'
export * from './backend/handlers.js'
export * from './backend/password.js'
export * from './backend/placeholders.js'
export * from './backend/settings.js'
export * from './backend/sql.js'
export * from './credentials.js'
