// Plugins log through a child of the node's logger that follows run-time
// level changes (pino children otherwise keep the level they were made with).
import t from 'tap'
import { createLogger, followingChild } from '../../lib/log.js'

t.test('a plugin logger follows the node level until released', async (t) => {
  const parent = createLogger('error', false)
  const { logger, release } = followingChild(parent, { plugin: 'broker_x' })
  t.equal(logger.level, 'error')
  parent.level = 'debug'
  t.equal(logger.level, 'debug', 'lowered at run time: the plugin logs debug lines too')
  parent.level = 'warn'
  t.equal(logger.level, 'warn')
  release()
  parent.level = 'trace'
  t.equal(logger.level, 'warn', 'an unloaded plugin\'s logger is left alone')
})
