// broker_stomp's settings through the host's reader and the plugin's
// schema: the shipped etc/plugins/broker_stomp.conf is the schema's
// defaults (EMQ X's), and a bad value is refused with file:line and key.
import t from 'tap'
import { join } from 'node:path'
import { INSTALL_ROOT, parseConfigText, readPluginConfigLines, validatePluginConfig } from '../../../lib/plugin-kit/testing.js'
import plugin from '../index.js'
import { schema, type StompConfig } from '../settings.js'

const FILE = 'etc/plugins/broker_stomp.conf'
const read = (text: string): StompConfig => validatePluginConfig(schema, parseConfigText(text, FILE), FILE)

t.test('the plugin names itself', async (t) => {
  t.equal(plugin.name, 'broker_stomp')
  t.type(plugin.description, 'string')
})

t.test('the shipped file holds EMQ X\'s defaults, the schema\'s', async (t) => {
  const file = join(INSTALL_ROOT, FILE)
  const shipped = validatePluginConfig(schema, await readPluginConfigLines(file), file)
  const defaults = read('')
  t.same(shipped, defaults)
  t.same(defaults, {
    'stomp.listener': '61613',
    'stomp.listener.acceptors': 4,
    'stomp.listener.max_connections': 512,
    'stomp.default_user.login': 'guest',
    'stomp.default_user.passcode': 'guest',
    'stomp.allow_anonymous': true,
    'stomp.frame.max_headers': 10,
    'stomp.frame.max_header_length': 1024,
    'stomp.frame.max_body_length': 8192
  })
})

t.test('values: addresses, switches, an empty default login', async (t) => {
  t.equal(read('stomp.listener = 127.0.0.1:61614')['stomp.listener'], '127.0.0.1:61614')
  t.equal(read('stomp.allow_anonymous = off')['stomp.allow_anonymous'], false)
  t.equal(read('stomp.default_user.login =')['stomp.default_user.login'], '')
})

t.test('bad values are refused with file:line and key', async (t) => {
  t.throws(() => read('stomp.listener = 61613\nstomp.listener = localhost'), { message: /^etc\/plugins\/broker_stomp\.conf:2: stomp\.listener: .*<port> or <address>:<port>/ })
  t.throws(() => read('stomp.listener = 70000'), { message: /:1: stomp\.listener: .*port over 65535/ })
  t.throws(() => read('stomp.frame.max_headers = 0'), { message: /:1: stomp\.frame\.max_headers: 0 is out of range 1\.\./ })
  t.throws(() => read('stomp.frame.max_body_length = lots'), { message: /:1: stomp\.frame\.max_body_length: \S+ is not (a number|an integer)/ })
  t.throws(() => read('stomp.allow_anonymous = maybe'), { message: /:1: stomp\.allow_anonymous: \S+ is not a switch/ })
  t.throws(() => read('stomp.frame.max_header = 5'), { message: /:1: stomp\.frame\.max_header: unknown setting$/ })
})
