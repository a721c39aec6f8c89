// The dashboard in a real browser (Debian's chromium, driven by
// playwright-core) against a real node with broker_dashboard and
// broker_management: one node and one browser page for the whole file, the
// subtests in order (signed in by the first). The broker is checked from the
// outside too: MQTT.js clients, plain HTTP to the management API, Debian's
// mosquitto_sub. DASHBOARD_SCREENSHOTS=<folder> saves each page there
// (`npm run screenshots` writes docs/dashboard/).
import { spawn } from 'node:child_process'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { chromium, type Browser, type Page, type Route } from 'playwright-core'
import t from 'tap'
import { freePort, startPluginNode, type PluginNode } from '../../../../lib/plugin-kit/testing.js'

const CHROMIUM = '/usr/bin/chromium'
const SHOTS = process.env.DASHBOARD_SCREENSHOTS
const DEADLINE_MS = 20_000

// a browser, a node and thirteen steps in one file: about 40 s on a quiet machine, 70 s on a loaded one
t.setTimeout(300_000)

const dashboardPort = await freePort()
const node: PluginNode = await startPluginNode({
  plugin: 'broker_dashboard',
  // a sample every second, so the overview's charts have points within the test
  settings: { 'dashboard.listener.http': `127.0.0.1:${dashboardPort}`, 'dashboard.sample_interval': '1s' },
  withApi: true,
  listeners: ['tcp', 'ws'],
  // a plugin with a setting its schema checks (a topic prefix: no wildcards)
  others: { broker_plugin_template: { 'template.greeting_topic': 'greetings' } }
})
const base = `http://127.0.0.1:${dashboardPort}`
const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
const page: Page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
page.setDefaultTimeout(DEADLINE_MS)
// the kick and delete buttons ask first
page.on('dialog', (dialog) => { void dialog.accept() })
t.teardown(async () => {
  await browser.close()
  await node.stop()
})

async function open (route: string, heading: string | RegExp): Promise<void> {
  await page.goto(`${base}/#/${route}`)
  await page.getByRole('heading', { level: 1, name: heading }).waitFor()
}

async function screenshot (name: string, target: Page = page): Promise<void> {
  if (SHOTS === undefined) return
  await mkdir(SHOTS, { recursive: true })
  // let charts and polled lists settle before the picture
  await target.waitForLoadState('networkidle')
  await target.screenshot({ path: join(SHOTS, `${name}.png`) })
}

/** The row of a table holding this text. */
const row = (table: string, text: string) => page.getByRole('table', { name: table }).getByRole('row').filter({ hasText: text })

t.test('sign in: a wrong password shows the API\'s message, the right one opens the overview', async (t) => {
  await page.goto(base)
  await page.getByLabel('User name').fill('admin')
  await page.getByLabel('Password').fill('not-the-password')
  await page.getByRole('button', { name: 'Sign in' }).click()
  const refusal = await fetch(`${base}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: 'not-the-password' }) })
  const { message } = await refusal.json() as { message: string }
  t.equal(refusal.status, 401)
  t.equal((await page.getByRole('alert').textContent())?.trim(), message)
  await screenshot('login')
  // by keyboard: the password, then Enter
  await page.getByLabel('Password').fill('public')
  await page.getByLabel('Password').press('Enter')
  await page.getByRole('heading', { name: 'Overview' }).waitFor()
  await row('Nodes', node.node.name).getByText('Running').waitFor()
  t.pass('signed in; the node is listed as running')
  await page.getByRole('img', { name: /Messages per second/ }).waitFor()
})

t.test('clients: a client that just connected is listed, kicked, and gone', async (t) => {
  const client = await node.mqtt({ clientId: 'browser-sees-me', username: 'alice' })
  await client.subscribeAsync('sensors/#')
  const closed = new Promise<void>((resolve) => client.once('close', () => resolve()))
  await open('clients', 'Clients')
  await page.getByLabel('Search').fill('alice')
  const line = row('Clients', 'browser-sees-me')
  await line.waitFor()
  t.match(await line.textContent(), /alice.*127\.0\.0\.1/)
  await line.getByRole('button', { name: 'browser-sees-me' }).click()
  const details = page.getByRole('region', { name: 'Client browser-sees-me' })
  await details.getByRole('cell', { name: 'sensors/#' }).waitFor()
  // the session's figures come with a second request
  await details.getByText('Inflight').waitFor()
  t.match(await details.textContent(), /Inflight0 \/ 32/)
  await screenshot('clients')
  await line.getByRole('button', { name: 'Kick' }).click()
  await closed
  await line.waitFor({ state: 'detached' })
  const listed = await node.http('GET', '/connections/browser-sees-me')
  t.same((listed.body as { items?: unknown[] }).items ?? listed.body, [], 'the API lists it no more')
})

t.test('subscriptions and topics list what a client subscribed, searchable', async (t) => {
  const client = await node.mqtt({ clientId: 'subscriber-1' })
  await client.subscribeAsync('plant/+/temperature')
  await open('subscriptions', 'Subscriptions')
  await page.getByLabel('Search').fill('plant/')
  await row('Subscriptions', 'subscriber-1').waitFor()
  await screenshot('subscriptions')
  await open('topics', /Topics/)
  await page.getByLabel('Search').fill('temperature')
  await row('Routes', 'plant/+/temperature').waitFor()
  await screenshot('topics')
  await client.endAsync()
  t.pass()
})

t.test('plugins: stop and start a plugin; a bad setting shows the validation error, a good one is applied', async (t) => {
  await open('plugins', /Plugins on/)
  const plugin = row('Plugins', 'broker_plugin_template')
  await plugin.getByText('running').waitFor()
  await plugin.getByRole('button', { name: 'Stop' }).click()
  await plugin.getByText('stopped').waitFor()
  t.equal(node.node.plugins.isActive('broker_plugin_template'), false, 'stopped on the node')
  await plugin.getByRole('button', { name: 'Start' }).click()
  await plugin.getByText('running').waitFor()
  t.equal(node.node.plugins.isActive('broker_plugin_template'), true, 'running again')

  await plugin.getByRole('button', { name: 'Settings' }).click()
  const form = page.getByRole('region', { name: 'Settings of broker_plugin_template' })
  const input = form.getByLabel('template.greeting_topic')
  await input.fill('bad/+')
  await form.getByRole('button', { name: 'Save settings' }).click()
  const refused = await node.http('PUT', `/nodes/${node.node.name}/plugin_configs/broker_plugin_template`, { 'template.greeting_topic': 'bad/+' })
  t.equal(refused.status, 400)
  const message = (refused.body as { message: string }).message
  t.equal((await form.getByRole('alert').textContent())?.trim(), message, 'the API\'s own message')
  await screenshot('plugins')
  await input.fill('hello/there')
  await form.getByRole('button', { name: 'Save settings' }).click()
  await form.getByRole('status').waitFor()
  const now = await node.http('GET', `/nodes/${node.node.name}/plugin_configs/broker_plugin_template`)
  t.match(now.body, [{ key: 'template.greeting_topic', value: 'hello/there' }])
})

t.test('listeners: the MQTT, WebSocket and HTTP listeners', async (t) => {
  await open('listeners', 'Listeners')
  for (const protocol of ['mqtt:tcp', 'mqtt:ws', 'http:management', 'http:dashboard']) await row('Listeners', protocol).waitFor()
  await screenshot('listeners')
  t.pass()
})

t.test('banned: add with an expiry, seen by the API and the broker; delete', async (t) => {
  await open('banned', 'Banned')
  const form = page.getByRole('form', { name: 'Ban' })
  await form.getByLabel('Who').fill('evil-client')
  await form.getByLabel('Reason').fill('flooding')
  await form.getByLabel('Until').fill('2099-01-02T03:04')
  await form.getByRole('button', { name: 'Ban' }).click()
  await row('Banned entries', 'evil-client').waitFor()
  const listed = await node.http('GET', '/banned/')
  const entry = (listed.body as { items: Array<{ who: string, as: string, until: number, reason: string }> }).items.find((b) => b.who === 'evil-client')
  t.match(entry, { as: 'client_id', reason: 'flooding' })
  t.equal(new Date(entry!.until * 1000).getFullYear(), 2099, 'until as chosen')
  await t.rejects(node.mqtt({ clientId: 'evil-client' }), 'the broker refuses the banned client')
  await screenshot('banned')
  await row('Banned entries', 'evil-client').getByRole('button', { name: 'Delete' }).click()
  await row('Banned entries', 'evil-client').waitFor({ state: 'detached' })
  t.same((await node.http('GET', '/banned/')).body, { items: [], meta: { count: 0, limit: 10000, page: 1 } })
})

t.test('applications: the secret shown once works against the REST API; disabled, it does not', async (t) => {
  await open('apps', 'Applications')
  const form = page.getByRole('form', { name: 'New application' })
  await form.getByLabel('Application id').fill('ci-app')
  await form.getByLabel('Name').fill('CI pipeline')
  await form.getByRole('button', { name: 'Create' }).click()
  const secret = await page.getByLabel('Secret').inputValue()
  t.ok(secret.length >= 8, 'a generated secret')
  await screenshot('apps')
  const asApp = { auth: `ci-app:${secret}` }
  t.equal((await node.http('GET', '/brokers/', undefined, asApp)).status, 200, 'HTTP Basic with the new secret')
  await page.getByRole('button', { name: 'I have copied it' }).click()
  t.equal(await page.getByLabel('Secret').count(), 0, 'the secret is not shown again')
  await row('Applications', 'ci-app').getByRole('button', { name: 'Disable' }).click()
  await row('Applications', 'ci-app').getByText('disabled').waitFor()
  t.equal((await node.http('GET', '/brokers/', undefined, asApp)).status, 401, 'a disabled application is refused')
  await row('Applications', 'ci-app').getByLabel('Expire on').fill('2099-12-31')
  await row('Applications', 'ci-app').getByRole('button', { name: 'Set expiry' }).click()
  await row('Applications', 'ci-app').getByText('2099').waitFor()
  t.match((await node.http('GET', '/apps/ci-app')).body, { status: false, expired: Number })
})

t.test('alarms: raised on the node, they show in the badge and on the page; a cleared one moves to the history', async (t) => {
  const badge = page.getByTestId('alarm-badge')
  t.equal((await badge.textContent())?.replace(/\s+/g, ' ').trim(), 'Alarms 0')
  const alarms = node.node.observability.alarms
  alarms.raise({ id: 'browser_test_disk', severity: 'warning', title: 'Disk almost full', summary: 'data/ is 95% full' })
  alarms.raise({ id: 'browser_test_link', severity: 'error', title: 'Bridge link down', summary: 'no answer from the remote broker' })
  // the badge polls: it updates without a reload
  await page.getByRole('link', { name: '2 alarms' }).waitFor()
  await open('alarms', 'Alarms')
  await row('Present alarms', 'Disk almost full').waitFor()
  await row('Present alarms', 'Bridge link down').waitFor()
  alarms.clear('browser_test_link')
  await row('Cleared alarms', 'Bridge link down').waitFor()
  await row('Present alarms', 'Bridge link down').waitFor({ state: 'detached' })
  await page.getByRole('link', { name: '1 alarms' }).waitFor()
  await screenshot('alarms')
  alarms.clear('browser_test_disk')
  await page.getByRole('link', { name: '0 alarms' }).waitFor()
  // the history is the node's (GET /alarms/history/), not what this page saw: it is there after a reload
  await page.reload()
  await open('alarms', 'Alarms')
  await row('Cleared alarms', 'Disk almost full').waitFor()
  t.match(await row('Cleared alarms', 'Bridge link down').textContent(), /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d.*\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/, 'raised and cleared times')
})

t.test('the badge updates when the API answers slower than it polls (a reload discards the answer of the one before it)', async (t) => {
  const badge = page.getByRole('link', { name: /^\d+ alarms$/ })
  t.equal(await badge.getAttribute('aria-label'), '0 alarms')
  // each answer of GET /alarms/ held back longer than the badge's 5 s poll
  const slow = async (route: Route): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, 7000)); await route.continue() }
  await page.route('**/api/v3/alarms/', slow)
  t.teardown(async () => await page.unroute('**/api/v3/alarms/', slow))
  const alarms = node.node.observability.alarms
  alarms.raise({ id: 'browser_test_slow', severity: 'warning', title: 'Slow answers', summary: 'the API answers in 7 s' })
  await page.getByRole('link', { name: '1 alarms' }).waitFor({ timeout: 90_000 })
  await page.unroute('**/api/v3/alarms/', slow)
  alarms.clear('browser_test_slow')
  await page.getByRole('link', { name: '0 alarms' }).waitFor()
})

t.test('websocket client: a message published from the page reaches mosquitto_sub; the page gets it too', async (t) => {
  // line-buffered, so its SUBACK line arrives when it is written (a pipe is block-buffered otherwise)
  const sub = spawn('stdbuf', ['-oL', 'mosquitto_sub', '-h', '127.0.0.1', '-p', String(node.port('tcp')), '-t', 'dashboard/hello', '-C', '1', '-d', '-i', 'mosquitto-watcher'])
  let out = ''
  const subscribed = new Promise<void>((resolve, reject) => {
    sub.stdout.on('data', (chunk: Buffer) => { out += chunk.toString(); if (out.includes('SUBACK')) resolve() })
    sub.once('exit', () => reject(new Error(`mosquitto_sub ended: ${out}`)))
  })
  const exited = new Promise<number | null>((resolve) => sub.once('exit', resolve))
  t.teardown(() => { sub.kill() })
  await subscribed

  await open('websocket', 'WebSocket client')
  const connection = page.getByRole('form', { name: 'Connection' })
  // Connect is enabled once the page has found the listener (click waits for that)
  await connection.getByRole('button', { name: 'Connect' }).click()
  t.equal(await connection.getByLabel('Broker URL').inputValue(), `ws://127.0.0.1:${node.port('ws')}/mqtt`, 'found in the listeners API')
  await connection.getByRole('status').getByText('connected').waitFor()
  const subscribe = page.getByRole('form', { name: 'Subscribe' })
  await subscribe.getByLabel('Topic filter').fill('dashboard/#')
  await subscribe.getByRole('button', { name: 'Subscribe' }).click()
  await subscribe.getByText('dashboard/#').waitFor()
  const publish = page.getByRole('form', { name: 'Publish' })
  await publish.getByLabel('Topic').fill('dashboard/hello')
  await publish.getByLabel('Payload').fill('hello from chromium')
  await publish.getByRole('button', { name: 'Publish' }).click()
  t.equal(await exited, 0, 'mosquitto_sub got its one message')
  t.match(out, /hello from chromium/)
  await row('Messages received', 'hello from chromium').waitFor()
  await screenshot('websocket')
})

t.test('administrators, settings and account pages', async (t) => {
  await open('users', 'Administrators')
  await row('Users', 'admin').waitFor()
  await screenshot('users')
  await open('settings', /Settings of/)
  await page.getByLabel('Search').fill('sys_interval')
  await row('Settings', 'mqtt.broker.sys_interval').getByText('now').waitFor()
  await screenshot('settings')
  await open('account', /Account of admin/)
  const form = page.getByRole('form', { name: 'Change password' })
  await form.getByLabel('Current password').fill('wrong-old')
  await form.getByLabel('New password', { exact: true }).fill('newpass1')
  await form.getByLabel('New password again').fill('newpass1')
  await form.getByRole('button', { name: 'Change password' }).click()
  await form.getByRole('alert').waitFor()
  await screenshot('account')
  t.pass()
})

t.test('a viewer sees the lists and no change buttons', async (t) => {
  t.equal((await node.http('POST', '/users/', { username: 'watcher', password: 'look-only', tags: 'viewer' })).status, 200)
  const viewer = await browser.newPage({ viewport: { width: 390, height: 844 } })
  viewer.setDefaultTimeout(DEADLINE_MS)
  t.teardown(async () => await viewer.close())
  const watched = await node.mqtt({ clientId: 'watched-client' })
  await viewer.goto(base)
  await viewer.getByLabel('User name').fill('watcher')
  await viewer.getByLabel('Password').fill('look-only')
  await viewer.getByRole('button', { name: 'Sign in' }).click()
  await viewer.getByRole('heading', { name: 'Overview' }).waitFor()
  const fitsWidth = async (): Promise<boolean> => await viewer.evaluate('document.documentElement.scrollWidth <= window.innerWidth') as boolean
  t.ok(await fitsWidth(), 'overview: no sideways scrolling at phone width')
  await screenshot('overview-phone', viewer)
  await viewer.goto(`${base}/#/clients`)
  await viewer.getByText('watched-client').waitFor()
  t.equal(await viewer.getByRole('button', { name: 'Kick' }).count(), 0)
  t.ok(await fitsWidth(), 'clients: no sideways scrolling at phone width')
  await viewer.goto(`${base}/#/plugins`)
  await viewer.getByText('broker_plugin_template').waitFor()
  t.equal(await viewer.getByRole('button', { name: /^(Stop|Start|Settings)$/ }).count(), 0)
  t.ok(await fitsWidth(), 'plugins: no sideways scrolling at phone width')
  await viewer.goto(`${base}/#/apps`)
  await viewer.getByText('ci-app').waitFor()
  t.equal(await viewer.getByRole('button', { name: /^(Create|Disable|Enable|Delete)$/ }).count(), 0)
  // the API refuses a viewer's change whatever the page shows
  await watched.endAsync()
})

t.test('overview: the charts read the samples of the node', async (t) => {
  await open('', 'Overview')
  // the plugin samples every second: wait for two
  await page.waitForFunction(async () => ((await (await fetch('/api/dashboard/samples')).json()) as { samples: unknown[] }).samples.length >= 2, undefined, { polling: 500 })
  const got = await page.evaluate(async () => await (await fetch('/api/dashboard/samples')).json()) as { interval_s: number, samples: Array<Record<string, number>> }
  t.equal(got.interval_s, 1)
  t.ok(got.samples.length >= 2, 'samples taken every second')
  t.match(got.samples[got.samples.length - 1], { ts: Number, received_per_s: Number, sent_per_s: Number, connections: Number, subscriptions: Number })
  for (const chart of ['Messages per second', 'Connections', 'Subscriptions']) await page.getByRole('img', { name: new RegExp(chart) }).waitFor()
  await screenshot('overview')
})

t.test('sign out ends the session', async (t) => {
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.getByRole('button', { name: 'Sign in' }).waitFor()
  await page.reload()
  await page.getByRole('button', { name: 'Sign in' }).waitFor()
  t.pass()
})
