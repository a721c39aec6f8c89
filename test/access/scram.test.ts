import t from 'tap';
import { hashForStorage, STORAGE_ITERATIONS } from '../../lib/plugin-kit/hash/password-hash.js';
import {
  ScramServer,
  scramFromPassword,
  scramFromSaltedPassword,
  scramFromStored,
  type ScramCredentials,
  type ScramError,
} from '../../lib/plugin-kit/scram.js';
import { ScramClient } from '../helpers/scram-client.js';

// RFC 7677 §3
const RFC = {
  user: 'user',
  password: 'pencil',
  clientNonce: 'rOprNGfwEbeRWgbNEkqO',
  serverNonce: '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0',
  salt: 'W22ZaJ0SNY7soEsUEjb6gQ==',
  clientFirst: 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO',
  serverFirst: 'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096',
  clientFinal: 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
  serverFinal: 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=',
};

const pencil = await scramFromPassword(RFC.password, Buffer.from(RFC.salt, 'base64'), 4096);
const AUTH_FAILED = 'SCRAM: authentication failed';

type Lookup = (username: string) => Promise<ScramCredentials | undefined>;
const lookupIn = (users: Map<string, ScramCredentials>): Lookup => async (username) => users.get(username);
const oneUser = (username: string, credentials: ScramCredentials): Lookup => lookupIn(new Map([[username, credentials]]));

/** The success value of a step; throws (failing the test) on `{ error }`. */
function ok<T extends object>(result: T | ScramError): T {
  if ('error' in result) throw new Error(`unexpected SCRAM error: ${result.error}`);
  return result;
}

/** The error of a step; throws (failing the test) on success. */
function err(result: object): string {
  if ('error' in result && typeof result.error === 'string') return result.error;
  throw new Error(`expected a SCRAM error, got ${JSON.stringify(result)}`);
}

/** A full exchange between `server` and the independent client; the server's final answer. */
async function exchange(server: ScramServer, client: ScramClient): Promise<{ serverFinal: Buffer; username: string } | ScramError> {
  const first = ok(await server.first(client.first()));
  return server.final(await client.final(first.serverFirst));
}

/** A server for user "user"/"pencil" past `first`, and the valid client-final-message for it. */
async function started(): Promise<{ server: ScramServer; valid: string; nonce: string }> {
  const server = new ScramServer(oneUser('user', pencil));
  const client = new ScramClient('user', 'pencil');
  const { serverFirst } = ok(await server.first(client.first()));
  const valid = (await client.final(serverFirst)).toString();
  return { server, valid, nonce: /^r=([^,]+),/.exec(serverFirst.toString())![1]! };
}

const b = (s: string): Buffer => Buffer.from(s, 'utf8');

t.test('RFC 7677 §3 test vector against the server', async (tt) => {
  const server = new ScramServer(oneUser(RFC.user, pencil), { nonce: () => RFC.serverNonce });
  const first = ok(await server.first(b(RFC.clientFirst)));
  tt.equal(first.serverFirst.toString(), RFC.serverFirst);
  tt.equal(first.username, 'user');
  const final = ok(await server.final(b(RFC.clientFinal)));
  tt.equal(final.serverFinal.toString(), RFC.serverFinal);
  tt.equal(final.username, 'user');
});

t.test('RFC 7677 §3 test vector against the test client', async (tt) => {
  const client = new ScramClient(RFC.user, RFC.password, { nonce: RFC.clientNonce });
  tt.equal(client.first().toString(), RFC.clientFirst);
  tt.equal((await client.final(b(RFC.serverFirst))).toString(), RFC.clientFinal);
  tt.equal(client.verify(b(RFC.serverFinal)), true);
  tt.equal(client.verify(b('v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G5=')), false, 'wrong server signature');
  tt.equal(new ScramClient('user', 'pencil').verify(b(RFC.serverFinal)), false, 'verify before final');
});

t.test('scramFromSaltedPassword matches scramFromPassword', async (tt) => {
  const { pbkdf2Sync } = await import('node:crypto');
  const salt = Buffer.from(RFC.salt, 'base64');
  const derived = scramFromSaltedPassword(pbkdf2Sync('pencil', salt, 4096, 32, 'sha256'), salt, 4096);
  tt.same(derived, pencil);
  tt.equal(derived.storedKey.length, 32);
  tt.equal(derived.serverKey.length, 32);
  tt.notSame(derived.storedKey, derived.serverKey);
});

t.test('password-derived credentials: defaults and a full exchange', async (tt) => {
  const a = await scramFromPassword('hunter2');
  const c = await scramFromPassword('hunter2');
  tt.equal(a.iterations, 4096);
  tt.equal(a.salt.length, 16);
  tt.notSame(a.salt, c.salt, 'a fresh random salt each time');
  const client = new ScramClient('alice', 'hunter2');
  const final = ok(await exchange(new ScramServer(oneUser('alice', a)), client));
  tt.equal(final.username, 'alice');
  tt.equal(client.verify(final.serverFinal), true, 'the client accepts the server signature');
});

t.test('hashForStorage values: SCRAM without knowing the password', async (tt) => {
  const stored = await hashForStorage('s3cret pässword');
  const creds = scramFromStored(stored);
  if (!creds) throw new Error('scramFromStored rejected a hashForStorage value');
  const [, , iterations, saltHex] = stored.split('$');
  tt.equal(creds.iterations, STORAGE_ITERATIONS);
  tt.equal(String(creds.iterations), iterations);
  tt.equal(creds.salt.toString('hex'), saltHex);
  tt.same(creds, await scramFromPassword('s3cret pässword', creds.salt, creds.iterations), 'same keys as from the password');

  const client = new ScramClient('bob', 's3cret pässword');
  const final = ok(await exchange(new ScramServer(oneUser('bob', creds)), client));
  tt.equal(final.username, 'bob');
  tt.equal(client.verify(final.serverFinal), true);
  tt.equal(err(await exchange(new ScramServer(oneUser('bob', creds)), new ScramClient('bob', 's3cret password'))), AUTH_FAILED);
});

t.test('scramFromStored: undefined for anything else, never throws', async (tt) => {
  const salt = '00112233445566778899aabbccddeeff';
  const hash32 = 'ab'.repeat(32);
  tt.ok(scramFromStored(`pbkdf2$sha256$1000$${salt}$${hash32}`), 'the accepted form, for contrast');
  for (const bad of [
    '',
    'plain',
    `pbkdf2$sha512$1000$${salt}$${'ab'.repeat(64)}`,
    `pbkdf2$sha256$1000$${salt}$${'ab'.repeat(20)}`,
    `pbkdf2$sha256$1000$${salt}$${'ab'.repeat(33)}`,
    `pbkdf2$sha256$0$${salt}$${hash32}`,
    `pbkdf2$sha256$-5$${salt}$${hash32}`,
    `pbkdf2$sha256$9999999999$${salt}$${hash32}`,
    `pbkdf2$sha256$1000$$${hash32}`,
    `pbkdf2$sha256$1000$abc$${hash32}`,
    `pbkdf2$sha256$1000$zz$${hash32}`,
    `pbkdf2$sha256$1000$${salt}`,
    `pbkdf2$sha256$1000$${salt}$${hash32}$extra`,
    `PBKDF2$SHA256$1000$${salt}$${hash32}`,
    '$2a$10$abcdefghijklmnopqrstuu5Lo0g67CiD3M4RpN1BmBb4Crp5w7dbK',
  ]) {
    tt.equal(scramFromStored(bad), undefined, JSON.stringify(bad));
  }
  tt.equal(scramFromStored(undefined as unknown as string), undefined, 'non-string at run time');
});

t.test('wrong password fails at final', async (tt) => {
  const server = new ScramServer(oneUser('user', pencil));
  const client = new ScramClient('user', 'pencil!');
  const { serverFirst } = ok(await server.first(client.first()));
  tt.equal(err(await server.final(await client.final(serverFirst))), AUTH_FAILED);
});

t.test('unknown user: normal-looking server-first, stable fake salt, failure at final', async (tt) => {
  const known = await hashForStorage('pw');
  const users = lookupIn(new Map([['known', scramFromStored(known)!]]));
  const shape = (nonce: string): RegExp => new RegExp(`^r=${nonce}[A-Za-z0-9+/]{24},s=[A-Za-z0-9+/]{22}==,i=${STORAGE_ITERATIONS}$`);
  const serverFirst = async (username: string): Promise<string> => {
    const client = new ScramClient(username, 'pw', { nonce: 'abc' });
    return ok(await new ScramServer(users).first(client.first())).serverFirst.toString();
  };
  const knownFirst = await serverFirst('known');
  const ghostFirst = await serverFirst('ghost');
  tt.match(knownFirst, shape('abc'), 'a stored user');
  tt.match(ghostFirst, shape('abc'), 'an unknown user looks the same');
  const salt = (text: string): string => /,s=([^,]+),/.exec(text)![1]!;
  tt.equal(salt(await serverFirst('ghost')), salt(ghostFirst), 'the fake salt is stable for a name');
  tt.not(salt(await serverFirst('phantom')), salt(ghostFirst), 'and differs between names');

  const error = err(await exchange(new ScramServer(users), new ScramClient('ghost', 'pw')));
  tt.equal(error, AUTH_FAILED, 'the same error as a wrong password');
  tt.equal(err(await exchange(new ScramServer(users), new ScramClient('known', 'wrong'))), AUTH_FAILED);
  ok(await exchange(new ScramServer(users), new ScramClient('known', 'pw')));
});

t.test('fakeIterations sets the iteration count shown to unknown users', async (tt) => {
  const server = new ScramServer(async () => undefined, { fakeIterations: 4096 });
  const { serverFirst } = ok(await server.first(new ScramClient('ghost', 'x').first()));
  tt.match(serverFirst.toString(), /,i=4096$/);
});

t.test('tampered nonce fails at final', async (tt) => {
  const { server, valid, nonce } = await started();
  const last = nonce.endsWith('X') ? 'Y' : 'X';
  const tampered = valid.replace(`r=${nonce}`, `r=${nonce.slice(0, -1)}${last}`);
  tt.not(tampered, valid);
  tt.match(err(await server.final(b(tampered))), /nonce/);

  const other = await started();
  tt.match(err(await other.server.final(b(other.valid.replace(`r=${other.nonce}`, `r=${other.nonce}x`)))), /nonce/, 'extended nonce');
});

t.test('tampered channel binding fails at final', async (tt) => {
  for (const cb of ['eSws', 'cD10bHMtdW5pcXVlLCw=', 'biws=', 'bi-s', 'YmFk']) {
    const { server, valid } = await started();
    const tampered = valid.replace('c=biws,', `c=${cb},`);
    tt.not(tampered, valid);
    tt.match(err(await server.final(b(tampered))), /channel binding/, cb);
  }
});

t.test('gs2 flag y (client supports channel binding, server does not) is accepted', async (tt) => {
  const client = new ScramClient('user', 'pencil', { gs2Header: 'y,,' });
  const final = ok(await exchange(new ScramServer(oneUser('user', pencil)), client));
  tt.equal(client.verify(final.serverFinal), true);
});

t.test('channel binding p= in the gs2 header is refused', async (tt) => {
  const server = new ScramServer(oneUser('user', pencil));
  tt.match(err(await server.first(b('p=tls-server-end-point,,n=user,r=abc'))), /channel binding is not supported/);
});

t.test('authzid: accepted only if empty or equal to the user', async (tt) => {
  for (const gs2Header of ['n,a=user,', 'n,a=,']) {
    const client = new ScramClient('user', 'pencil', { gs2Header });
    tt.equal(client.verify(ok(await exchange(new ScramServer(oneUser('user', pencil)), client)).serverFinal), true, gs2Header);
  }
  const server = new ScramServer(oneUser('user', pencil));
  tt.match(err(await server.first(b('n,a=admin,n=user,r=abc'))), /authorization identity/);
  // c= must echo the a= header, not just n,,
  const s = new ScramServer(oneUser('user', pencil));
  const withAuthzid = new ScramClient('user', 'pencil', { gs2Header: 'n,a=user,' });
  const { serverFirst } = ok(await s.first(withAuthzid.first()));
  const plain = new ScramClient('user', 'pencil', { nonce: withAuthzid.nonce });
  tt.match(err(await s.final(await plain.final(serverFirst))), /channel binding/, 'c=biws for an a= header');
});

t.test('malformed client-first-messages give errors, never throws', async (tt) => {
  let looked = 0;
  const cases: Array<[string, Buffer, RegExp]> = [
    ['empty', b(''), /invalid GS2 header/],
    ['gs2 flag only', b('n'), /username/],
    ['header only', b('n,,'), /username/],
    ['no nonce', b('n,,n=user'), /nonce/],
    ['empty nonce', b('n,,n=user,r='), /nonce/],
    ['nonce with control char', b('n,,n=user,r=a\tb'), /nonce/],
    ['no username', b('n,,r=abc'), /username/],
    ['empty username', b('n,,n=,r=abc'), /username/],
    ['stray = in username', b('n,,n=us=er,r=abc'), /username/],
    ['lowercase escape', b('n,,n=us=2cer,r=abc'), /username/],
    ['swapped attributes', b('n,,r=abc,n=user'), /username/],
    ['bad gs2 flag', b('x,,n=user,r=abc'), /invalid GS2 header/],
    ['bad authzid field', b('n,b=x,n=user,r=abc'), /invalid GS2 header/],
    ['mandatory extension', b('n,,m=ext,n=user,r=abc'), /mandatory extensions/],
    ['bad extension', b('n,,n=user,r=abc,1=x'), /extension/],
    ['empty extension', b('n,,n=user,r=abc,'), /extension/],
    ['invalid UTF-8', Buffer.from([0x6e, 0x2c, 0x2c, 0x6e, 0x3d, 0xff, 0x2c, 0x72, 0x3d, 0x61]), /UTF-8/],
    ['NUL', b('n,,n=us\0er,r=abc'), /UTF-8/],
    ['not a buffer', undefined as unknown as Buffer, /UTF-8/],
  ];
  for (const [name, message, expected] of cases) {
    const server = new ScramServer(async () => {
      looked++;
      return pencil;
    });
    tt.match(err(await server.first(message)), expected, name);
    tt.match(err(await server.final(b(RFC.clientFinal))), /without a pending/, `${name}: no final after a failed first`);
  }
  tt.equal(looked, 0, 'no lookup for a malformed message');
});

t.test('malformed client-final-messages give errors, never throws', async (tt) => {
  const mutations: Array<[string, (valid: string, nonce: string) => string | Buffer, RegExp]> = [
    ['empty', () => '', /malformed client-final/],
    ['only c=', () => 'c=biws', /malformed client-final/],
    ['no proof', (_v, n) => `c=biws,r=${n}`, /malformed client-final/],
    ['no nonce', (v) => v.replace(/r=[^,]+,/, ''), /malformed client-final/],
    ['no channel binding', (v) => v.replace('c=biws,', ''), /malformed client-final/],
    ['reordered', (_v, n) => `r=${n},c=biws,p=${'A'.repeat(43)}=`, /malformed client-final/],
    ['empty proof', (v) => v.replace(/p=.*$/, 'p='), /client proof/],
    ['bad base64 proof', (v) => v.replace(/p=.*$/, 'p=!!!notbase64!!!'), /client proof/],
    ['unpadded proof', (v) => v.replace(/=$/, ''), /client proof/],
    ['short proof', (v) => v.replace(/p=.*$/, `p=${Buffer.alloc(16, 1).toString('base64')}`), /client proof/],
    ['long proof', (v) => v.replace(/p=.*$/, `p=${Buffer.alloc(64, 1).toString('base64')}`), /client proof/],
    ['empty channel binding', (v) => v.replace('c=biws', 'c='), /channel binding/],
    ['bad extension', (v) => v.replace(',p=', ',9=x,p='), /malformed client-final/],
    ['invalid UTF-8', () => Buffer.from([0x63, 0x3d, 0xc3]), /UTF-8/],
    ['flipped proof bit', (v) => v.replace(/p=(.)/, (_m, c: string) => `p=${c === 'A' ? 'B' : 'A'}`), /authentication failed/],
  ];
  for (const [name, mutate, expected] of mutations) {
    const { server, valid, nonce } = await started();
    const message = mutate(valid, nonce);
    tt.not(message.toString(), valid, `${name}: really changed`);
    tt.match(err(await server.final(typeof message === 'string' ? b(message) : message)), expected, name);
  }
  const control = await started();
  ok(await control.server.final(b(control.valid)));
});

t.test('out-of-order calls give errors', async (tt) => {
  const server = new ScramServer(oneUser('user', pencil));
  tt.match(err(await server.final(b(RFC.clientFinal))), /without a pending/, 'final before first');
  tt.match(err(await server.first(new ScramClient('user', 'pencil').first())), /already received/, 'the exchange is over');

  const { server: s, valid } = await started();
  ok(await s.final(b(valid)));
  tt.match(err(await s.final(b(valid))), /without a pending/, 'final twice');

  const again = new ScramServer(oneUser('user', pencil));
  ok(await again.first(new ScramClient('user', 'pencil').first()));
  tt.match(err(await again.first(new ScramClient('user', 'pencil').first())), /already received/, 'first twice');

  const { server: f, valid: v } = await started();
  err(await f.final(b(v.replace('c=biws', 'c=eSws'))));
  tt.match(err(await f.final(b(v))), /without a pending/, 'no retry after a failed final');
});

t.test('usernames with , and = are escaped as =2C and =3D', async (tt) => {
  for (const name of ['us,er=1', 'a=2C,b', '=3D', ',,==']) {
    const seen: string[] = [];
    const server = new ScramServer(async (username) => {
      seen.push(username);
      return username === name ? pencil : undefined;
    });
    const client = new ScramClient(name, 'pencil');
    tt.notMatch(client.first().toString().slice(3), /,.*,/, `${name}: one comma in the bare message`);
    const final = ok(await exchange(server, client));
    tt.equal(final.username, name);
    tt.same(seen, [name], 'looked up by the decoded name');
    tt.equal(client.verify(final.serverFinal), true);
  }
  const server = new ScramServer(oneUser('us,er', pencil));
  tt.equal(ok(await server.first(b('n,a=us=2Cer,n=us=2Cer,r=abc'))).username, 'us,er', 'escaped authzid too');
});

t.test('lookup failures and broken credentials give errors', async (tt) => {
  const throwing = new ScramServer(async () => {
    throw new Error('database down');
  });
  tt.match(err(await throwing.first(new ScramClient('user', 'pencil').first())), /lookup failed/);

  const broken = { ...pencil, storedKey: Buffer.alloc(16) };
  tt.equal(err(await exchange(new ScramServer(oneUser('user', broken)), new ScramClient('user', 'pencil'))), AUTH_FAILED);
});

t.test('optional extensions are ignored (and kept in the AuthMessage)', async (tt) => {
  const server = new ScramServer(oneUser('user', pencil), { nonce: () => RFC.serverNonce });
  const { serverFirst } = ok(await server.first(b(`${RFC.clientFirst},x=ext`)));
  tt.equal(serverFirst.toString(), RFC.serverFirst);
  tt.equal(err(await server.final(b(RFC.clientFinal))), AUTH_FAILED, 'the RFC proof does not cover the extension');

  const final = new ScramServer(oneUser('user', pencil), { nonce: () => RFC.serverNonce });
  ok(await final.first(b(RFC.clientFirst)));
  const withExtension = RFC.clientFinal.replace(',p=', ',x=ext,p=');
  tt.equal(err(await final.final(b(withExtension))), AUTH_FAILED, 'a client-final extension is part of the AuthMessage');
});

t.test('server nonce: client nonce plus 18 fresh random bytes', async (tt) => {
  const suffixes = new Set<string>();
  for (let i = 0; i < 3; i++) {
    const server = new ScramServer(oneUser('user', pencil));
    const { serverFirst } = ok(await server.first(b('n,,n=user,r=cnonce')));
    const m = /^r=cnonce([^,]+),/.exec(serverFirst.toString());
    if (!m) throw new Error(`unexpected server-first ${serverFirst.toString()}`);
    tt.ok(Buffer.from(m[1]!, 'base64').length >= 18);
    suffixes.add(m[1]!);
  }
  tt.equal(suffixes.size, 3);
  const bad = new ScramServer(oneUser('user', pencil), { nonce: () => 'a,b' });
  tt.match(err(await bad.first(b('n,,n=user,r=cnonce'))), /server nonce/);
});
