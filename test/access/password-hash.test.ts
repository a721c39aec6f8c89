import t from 'tap';
import { createHash, pbkdf2Sync } from 'node:crypto';
import bcrypt from 'bcryptjs';
import {
  constantTimeEqual,
  hashForStorage,
  hashPassword,
  isMacfunAvailable,
  parseHashSpec,
  verifyPassword,
  verifyStored,
  type HashSpec,
  type Pbkdf2Params,
} from '../../lib/plugin-kit/hash/password-hash.js';

const spec = (text: string): HashSpec => parseHashSpec(text);

/** Independent probe: can this Node/OpenSSL compute md4? */
function md4Works(): boolean {
  try {
    createHash('md4').update('').digest();
    return true;
  } catch {
    return false;
  }
}

// Cross-checked against libxcrypt (python3 crypt.crypt) when generated.
const BCRYPT_SALT = '$2a$10$abcdefghijklmnopqrstuu';
const BCRYPT_HASH = '$2a$10$abcdefghijklmnopqrstuu5Lo0g67CiD3M4RpN1BmBb4Crp5w7dbK';

// cross-checked with coreutils md5sum/sha1sum/sha256sum
t.test('published digest vectors (hex, lowercase)', async (t) => {
  t.equal(await hashPassword(spec('plain'), 'password'), 'password');
  t.equal(await hashPassword(spec('md5'), 'password'), '5f4dcc3b5aa765d61d8327deb882cf99');
  t.equal(await hashPassword(spec('sha'), 'password'), '5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8');
  t.equal(await hashPassword(spec('sha256'), 'password'),
    '5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8');
  t.equal(await hashPassword(spec('sha512'), 'password'),
    'b109f3bbbc244eb82441917ed06d618b9008dd09b3befd1b5e07394c706a8bb980b1d7785e5976ec049b46df5f1326af5a2ea6d103fd07c95385ffab0cacbc86');
  t.ok(await verifyPassword(spec('md5'), 'password', '5f4dcc3b5aa765d61d8327deb882cf99'));
  t.notOk(await verifyPassword(spec('md5'), 'Password', '5f4dcc3b5aa765d61d8327deb882cf99'));
  t.notOk(await verifyPassword(spec('plain'), 'secret', 'secreT'));
});

t.test('pbkdf2 vectors (RFC 6070 and PBKDF2-HMAC-SHA256)', async (t) => {
  t.equal(await hashPassword(spec('pbkdf2,sha,1,20'), 'password', 'salt'), '0c60c80f961f0e71f3a9b524af6012062fe037a6');
  t.equal(await hashPassword(spec('pbkdf2,sha,2,20'), 'password', 'salt'), 'ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957');
  t.equal(await hashPassword(spec('pbkdf2,sha,4096,20'), 'password', 'salt'), '4b007901b765489abead49d926f721d065a429c1');
  t.equal(await hashPassword(spec('pbkdf2,sha256,4096,32'), 'password', 'salt'),
    'c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a');
  const bare = parseHashSpec('pbkdf2', { macfun: 'sha256', iterations: 1, dklen: 32 });
  t.equal(await hashPassword(bare, 'password', 'salt'), '120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b');
  // dklen bytes -> 2*dklen hex chars, matching an independent computation
  const s512 = spec('pbkdf2,sha512,10,7');
  const expected = pbkdf2Sync('pässword', 'NaCl', 10, 7, 'sha512').toString('hex');
  t.equal(await hashPassword(s512, 'pässword', 'NaCl'), expected);
  t.equal(expected.length, 14);
  t.ok(await verifyPassword(s512, 'pässword', expected, 'NaCl'));
  t.notOk(await verifyPassword(s512, 'pässword', expected, 'NaCI'), 'different salt fails');
  await t.rejects(hashPassword(s512, 'pässword'), /needs a salt/);
});

t.test('legacy pbkdf2 digests: md4 / ripemd160', async (t) => {
  // ripemd160 works on this build; vector cross-checked with python hashlib.pbkdf2_hmac
  if (isMacfunAvailable('ripemd160')) {
    t.equal(await hashPassword(spec('pbkdf2,ripemd160,1,20'), 'password', 'salt'), 'b725258b125e0bacb0e2307e34feb16a4d0d6aed');
  } else {
    t.throws(() => spec('pbkdf2,ripemd160,1,20'), /"ripemd160" is not supported/);
  }
  // md4 is computed by lib/access/md4.ts whatever OpenSSL offers
  t.ok(isMacfunAvailable('md4'));
  if (md4Works()) {
    t.equal(await hashPassword(spec('pbkdf2,md4,3,16'), 'pw', 's'), pbkdf2Sync('pw', 's', 3, 16, 'md4').toString('hex'));
  }
  t.equal(await hashPassword(spec('pbkdf2,md4,3,16'), 'pw', 's'), '6e0d0dce486481ac920820d880d7b102', 'openssl kdf (legacy provider) agrees');
});

t.test('salt prefix vs suffix', async (t) => {
  const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
  const pre = await hashPassword(spec('salt,sha256'), 'password', 'NaCl');
  const suf = await hashPassword(spec('sha256,salt'), 'password', 'NaCl');
  t.equal(pre, sha256('NaClpassword'));
  t.equal(suf, sha256('passwordNaCl'));
  t.not(pre, suf);
  t.equal(await hashPassword(spec('salt,md5'), 'password', 'x'), createHash('md5').update('xpassword').digest('hex'));
  t.equal(await hashPassword(spec('plain,salt'), 'pw', 'x'), 'pwx');
  t.ok(await verifyPassword(spec('salt sha256'), 'password', pre, 'NaCl'));
  t.ok(await verifyPassword(spec('sha256 salt'), 'password', suf, 'NaCl'));
  t.notOk(await verifyPassword(spec('salt,sha256'), 'password', suf, 'NaCl'), 'suffix hash rejected as prefix');
  t.notOk(await verifyPassword(spec('salt,sha256'), 'password', pre, 'other'));
  await t.rejects(verifyPassword(spec('salt,sha256'), 'password', pre), /needs a salt value/);
  t.equal(await hashPassword(spec('sha256'), 'password', 'ignored'), sha256('password'), 'no position ignores salt');
});

t.test('bcrypt', async (t) => {
  t.equal(bcrypt.hashSync('password', BCRYPT_SALT), BCRYPT_HASH);
  t.ok(await verifyPassword(spec('bcrypt'), 'password', BCRYPT_HASH));
  t.notOk(await verifyPassword(spec('bcrypt'), 'passwore', BCRYPT_HASH));
  t.notOk(await verifyPassword(spec('bcrypt'), 'password', 'not-a-bcrypt-hash'));
  // salt,bcrypt: hash = bcrypt(password, salt column)
  t.equal(await hashPassword(spec('salt,bcrypt'), 'password', BCRYPT_SALT), BCRYPT_HASH);
  t.ok(await verifyPassword(spec('salt,bcrypt'), 'password', BCRYPT_HASH, BCRYPT_SALT));
  t.notOk(await verifyPassword(spec('salt,bcrypt'), 'wrong', BCRYPT_HASH, BCRYPT_SALT));
  t.notOk(await verifyPassword(spec('salt,bcrypt'), 'password', BCRYPT_HASH, 'garbage-salt'), 'bad salt -> false');
  // round trip with a fresh random salt (cost 4 keeps the test fast)
  const fresh = await hashPassword(spec('bcrypt'), 's3cret', bcrypt.genSaltSync(4));
  t.match(fresh, /^\$2[aby]\$04\$.{53}$/);
  t.ok(await verifyPassword(spec('bcrypt'), 's3cret', fresh));
  t.notOk(await verifyPassword(spec('bcrypt'), 's3cret!', fresh));
  const generated = await hashPassword(spec('bcrypt'), 'pw'); // no salt given: random, cost 10
  t.match(generated, /^\$2[aby]\$10\$.{53}$/);
  t.ok(await verifyPassword(spec('bcrypt'), 'pw', generated));
});

t.test('constantTimeEqual', async (t) => {
  t.ok(constantTimeEqual('abc', 'abc'));
  t.notOk(constantTimeEqual('abc', 'abd'));
  t.notOk(constantTimeEqual('abc', 'abcd'), 'length mismatch is false');
  t.notOk(constantTimeEqual('', 'a'));
  t.notOk(constantTimeEqual('é', 'ab'), 'same byte length, different content');
  t.notOk(await verifyPassword(spec('md5'), 'password', '5f4dcc3b5aa765d61d8327deb882cf9'), 'short stored hash');
});

t.test('parseHashSpec accepts every EMQ X form', async (t) => {
  const cases: Array<[string, HashSpec]> = [
    ['plain', { algorithm: 'plain', saltPosition: 'none' }],
    ['md5', { algorithm: 'md5', saltPosition: 'none' }],
    ['sha', { algorithm: 'sha', saltPosition: 'none' }],
    ['sha256', { algorithm: 'sha256', saltPosition: 'none' }],
    ['sha512', { algorithm: 'sha512', saltPosition: 'none' }],
    ['bcrypt', { algorithm: 'bcrypt', saltPosition: 'none' }],
    ['sha256 salt', { algorithm: 'sha256', saltPosition: 'suffix' }],
    ['salt sha256', { algorithm: 'sha256', saltPosition: 'prefix' }],
    ['salt,sha256', { algorithm: 'sha256', saltPosition: 'prefix' }],
    ['sha256,salt', { algorithm: 'sha256', saltPosition: 'suffix' }],
    [' salt, md5 ', { algorithm: 'md5', saltPosition: 'prefix' }],
    ['salt,bcrypt', { algorithm: 'bcrypt', saltPosition: 'prefix' }],
    ['pbkdf2,sha256,1000,20', {
      algorithm: 'pbkdf2', saltPosition: 'none', pbkdf2: { macfun: 'sha256', iterations: 1000, dklen: 20 },
    }],
  ];
  for (const [text, expected] of cases) t.strictSame(parseHashSpec(text), expected, text);
  t.strictSame(parseHashSpec('pbkdf2', { macfun: 'sha512', iterations: 5, dklen: 64 }), {
    algorithm: 'pbkdf2', saltPosition: 'none', pbkdf2: { macfun: 'sha512', iterations: 5, dklen: 64 },
  });
});

t.test('parseHashSpec rejects garbage with a message naming it', async (t) => {
  const bad = ['', 'sha1024', 'salt', 'salt,salt', 'salt,sha256,salt', 'sha256,,salt', 'md5,pepper',
    'salt,pbkdf2', 'pbkdf2', 'pbkdf2,sha256', 'pbkdf2,sha1,1000,20', 'pbkdf2,sha256,0,20',
    'pbkdf2,sha256,1000,-1', 'pbkdf2,sha256,10x,20', 'pbkdf2,sha256,1000,20,1'];
  for (const text of bad) {
    const escaped = text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    t.throws(() => parseHashSpec(text), new RegExp(`^Invalid password hash spec "${escaped}": \\S`), text);
  }
  t.throws(() => parseHashSpec('pbkdf2', { macfun: 'sha256', iterations: 0, dklen: 20 }), /Invalid pbkdf2 iterations/);
  t.throws(() => parseHashSpec('pbkdf2', { macfun: 'sha256', iterations: 1, dklen: 1.5 }), /Invalid pbkdf2 dklen/);
  // options from untyped config: EMQ X calls SHA-1 "sha", not "sha1"
  const sha1 = { macfun: 'sha1', iterations: 1, dklen: 20 } as unknown as Pbkdf2Params;
  t.throws(() => parseHashSpec('pbkdf2', sha1), /Invalid pbkdf2 macfun in "pbkdf2": sha1/);
  await t.rejects(hashPassword({ algorithm: 'pbkdf2', saltPosition: 'none' }, 'pw', 's'), /missing its parameters/);
});

t.test('hashForStorage / verifyStored', async (t) => {
  const stored = await hashForStorage('hunter2');
  t.match(stored, /^pbkdf2\$sha256\$100000\$[0-9a-f]{32}\$[0-9a-f]{64}$/);
  const [, , iter, salt, hash] = stored.split('$');
  t.equal(pbkdf2Sync('hunter2', Buffer.from(salt ?? '', 'hex'), Number(iter), 32, 'sha256').toString('hex'), hash);
  t.not(await hashForStorage('hunter2'), stored, 'random salt');
  t.ok(await verifyStored('hunter2', stored));
  t.notOk(await verifyStored('hunter3', stored));
  // a literal from RFC-style vector: pbkdf2-sha256("password", "salt", 1, 32)
  t.ok(await verifyStored('password', `pbkdf2$sha256$1$${Buffer.from('salt').toString('hex')}$120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b`));
  const malformed = ['', 'garbage', stored.replace('pbkdf2$', 'scrypt$'), stored.replace('$sha256$', '$md5$'),
    stored.replace('$100000$', '$0$'), stored.replace('$100000$', '$abc$'), stored.replace('$100000$', '$99999999999$'),
    `${stored}$extra`, stored.slice(0, -1), stored.slice(0, stored.lastIndexOf('$') + 1), stored.replace(/[0-9a-f]{32}\$/, 'zz$'),
    stored.toUpperCase()];
  for (const m of malformed) t.equal(await verifyStored('hunter2', m), false, `malformed: ${m.slice(0, 40)}`);
  // untyped callers (e.g. a NULL column) must not make it throw either
  t.equal(await verifyStored('hunter2', null as unknown as string), false, 'non-string stored value');
});
