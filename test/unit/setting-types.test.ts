// The settings editors' types (GET plugin_configs' `datatype`/`values`, the dashboard's inputs) come from the
// plugin's own joi schema: an enum's accepted values, integers, booleans, and a key's own `datatype` label.
import Joi from 'joi'
import t from 'tap'
import { settingTypes } from '../../lib/plugin-kit/setting-types.js'
import { schema as retainerSchema } from '../../plugins/broker_retainer/index.js'

t.test('the shipped retainer schema', async (t) => {
  const types = settingTypes(retainerSchema)
  t.same(types.get('retainer.storage_type'), { datatype: 'enum', values: ['ram', 'disc', 'disc_only'] }, 'an enum with the values the schema accepts')
  t.same(types.get('retainer.max_retained_messages'), { datatype: 'integer' })
  t.same(types.get('retainer.max_payload_size'), { datatype: 'bytesize' }, 'the key\'s own datatype label wins over its joi type')
})

t.test('each joi type', async (t) => {
  const types = settingTypes(Joi.object({
    count: Joi.number().integer(),
    ratio: Joi.number(),
    on: Joi.boolean().truthy('on').falsy('off'),
    mode: Joi.string().valid('a', 'b'),
    name: Joi.string().allow('')
  }).pattern(/^x\./, Joi.string()))
  t.same(Object.fromEntries(types), {
    count: { datatype: 'integer' },
    ratio: { datatype: 'number' },
    on: { datatype: 'boolean' },
    mode: { datatype: 'enum', values: ['a', 'b'] },
    name: { datatype: 'string' }
  }, 'a key matched only by a pattern has no type')
})
