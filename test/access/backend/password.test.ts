import t from 'tap'
import { createHash, pbkdf2Sync } from 'node:crypto'
import bcrypt from 'bcryptjs'
import Joi from 'joi'
import { passwordChecker, passwordHashSetting, usesSalt } from '../../../lib/plugin-kit/backend/password.js'

const hex = (alg: string, text: string): string => createHash(alg).update(text).digest('hex')

t.test('every form of SPEC §5.2 checks a right and a wrong password', async (t) => {
  const salt = 'NaCl'
  const bsalt = bcrypt.genSaltSync(4)
  const cases: Array<[setting: string, stored: string, salt?: string]> = [
    ['plain', 'pw'],
    ['md5', hex('md5', 'pw')],
    ['sha', hex('sha1', 'pw')],
    ['sha256', hex('sha256', 'pw')],
    ['sha512', hex('sha512', 'pw')],
    ['bcrypt', bcrypt.hashSync('pw', 4)],
    ['salt,sha256', hex('sha256', salt + 'pw'), salt],
    ['sha256,salt', hex('sha256', 'pw' + salt), salt],
    ['salt sha256', hex('sha256', salt + 'pw'), salt],
    ['sha256 salt', hex('sha256', 'pw' + salt), salt],
    ['salt,md5', hex('md5', salt + 'pw'), salt],
    ['salt,bcrypt', bcrypt.hashSync('pw', bsalt), bsalt],
    ['pbkdf2,sha256,1000,20', pbkdf2Sync('pw', salt, 1000, 20, 'sha256').toString('hex'), salt]
  ]
  for (const [setting, stored, s] of cases) {
    const check = passwordChecker(setting)
    t.equal(await check('pw', stored, s), true, `${setting} right`)
    t.equal(await check('pW', stored, s), false, `${setting} wrong`)
  }
})

t.test('a salted form without a stored salt is a failed check, not an error', async (t) => {
  t.equal(await passwordChecker('salt,sha256')('pw', hex('sha256', 'pw')), false)
  t.equal(await passwordChecker('bcrypt')('pw', 'not-a-bcrypt-hash'), false)
})

t.test('usesSalt', async (t) => {
  t.equal(usesSalt('sha256'), false)
  t.equal(usesSalt('bcrypt'), false)
  t.equal(usesSalt('salt,sha256'), true)
  t.equal(usesSalt('sha256 salt'), true)
  t.equal(usesSalt('pbkdf2,sha256,1000,20'), true)
})

t.test('a bad setting is a schema error; a bad form throws', async (t) => {
  const schema = Joi.object({ hash: passwordHashSetting('sha256') })
  t.same(schema.validate({}).value, { hash: 'sha256' })
  t.same(schema.validate({ hash: ' salt,bcrypt ' }).value, { hash: 'salt,bcrypt' })
  t.match(schema.validate({ hash: 'sha3' }).error?.message, /Invalid password hash spec "sha3"/)
  t.match(schema.validate({ hash: 'pbkdf2' }).error?.message, /pbkdf2/)
  t.throws(() => passwordChecker('rot13'), /Invalid password hash spec/)
})
