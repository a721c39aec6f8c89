// An MQTT client in the browser over the broker's WebSocket listener (found
// in the listeners API): connect, subscribe, publish, see the messages.
// MQTT.js is loaded only when this page is opened.
import type { JSX } from 'preact'
import { useEffect, useRef, useState } from 'preact/hooks'
import type { MqttClient } from 'mqtt'
import { v3, type ByNode } from '../api.js'
import { Action, ErrorLine, Field, PageHead, Select, Table } from '../components/ui.js'
import { useSession } from '../session.js'
import type { ListenerRecord } from '../types.js'
import { flatten } from './listeners.js'

interface Received { n: number, topic: string, payload: string, qos: number, retain: boolean, at: string }

const QOS: Array<[string, string]> = [['0', 'QoS 0'], ['1', 'QoS 1'], ['2', 'QoS 2']]
const KEEP = 100

/** ws(s)://<this page's host>:<port>/mqtt for the node's WebSocket listener. */
async function brokerUrl (node: string): Promise<string> {
  const rows = flatten(await v3.get<ByNode<'listeners', ListenerRecord[]>>('/listeners/')).filter((l) => node === '' || l.node === node)
  const ws = rows.find((l) => l.protocol === 'mqtt:ws') ?? rows.find((l) => l.protocol === 'mqtt:wss')
  if (ws === undefined) return ''
  const port = ws.listen_on.split(':').pop()
  return `${ws.protocol === 'mqtt:wss' ? 'wss' : 'ws'}://${location.hostname}:${port}/mqtt`
}

export function WebSocketClient (): JSX.Element {
  const { someNode } = useSession()
  const [url, setUrl] = useState('')
  const [clientId, setClientId] = useState(() => `dashboard-${Math.random().toString(16).slice(2, 10)}`)
  const [username, setUsername] = useState('')
  const [password, setPassword] = useState('')
  const [state, setState] = useState<'disconnected' | 'connecting' | 'connected'>('disconnected')
  const [error, setError] = useState<string | undefined>(undefined)
  const [subs, setSubs] = useState<Array<{ topic: string, qos: number }>>([])
  const [filter, setFilter] = useState('#')
  const [subQos, setSubQos] = useState('0')
  const [topic, setTopic] = useState('hello')
  const [payload, setPayload] = useState('Hello from the dashboard')
  const [pubQos, setPubQos] = useState('0')
  const [retain, setRetain] = useState(false)
  const [messages, setMessages] = useState<Received[]>([])
  const client = useRef<MqttClient | null>(null)
  const count = useRef(0)

  useEffect(() => {
    brokerUrl(someNode).then((found) => { if (found === '') setError('no WebSocket listener (mqtt:ws) is open on this node'); setUrl((u) => u === '' ? found : u) }, (err: Error) => setError(err.message))
  }, [someNode])
  useEffect(() => () => { client.current?.end(true) }, [])

  const connect = async (): Promise<void> => {
    setError(undefined)
    setState('connecting')
    const { default: mqtt } = await import('mqtt')
    await new Promise<void>((resolve, reject) => {
      const c = mqtt.connect(url, { clientId, username: username || undefined, password: password || undefined, reconnectPeriod: 0, connectTimeout: 10_000 })
      client.current = c
      c.once('connect', () => { setState('connected'); resolve() })
      c.on('error', (err) => { setError(err.message); reject(err) })
      c.on('close', () => { setState('disconnected'); setSubs([]); reject(new Error(`the connection to ${url} closed`)) })
      c.on('message', (t, body, packet) => {
        const entry = { n: ++count.current, topic: t, payload: new TextDecoder().decode(body), qos: packet.qos, retain: packet.retain, at: new Date().toLocaleTimeString() }
        setMessages((before) => [entry, ...before].slice(0, KEEP))
      })
    }).catch((err: Error) => { client.current?.end(true); client.current = null; setState('disconnected'); throw err })
  }
  const disconnect = async (): Promise<void> => {
    await client.current?.endAsync()
    client.current = null
    setState('disconnected')
  }
  const subscribe = async (): Promise<void> => {
    const granted = await client.current!.subscribeAsync(filter, { qos: Number(subQos) as 0 | 1 | 2 })
    const refused = granted.find((g) => g.qos === 128)
    if (refused !== undefined) throw new Error(`the broker refused the subscription to ${filter}`)
    setSubs((before) => [...before.filter((s) => s.topic !== filter), { topic: filter, qos: Number(subQos) }])
  }
  const unsubscribe = async (t: string): Promise<void> => {
    await client.current!.unsubscribeAsync(t)
    setSubs((before) => before.filter((s) => s.topic !== t))
  }
  const publish = async (): Promise<void> => {
    await client.current!.publishAsync(topic, payload, { qos: Number(pubQos) as 0 | 1 | 2, retain })
  }
  const connected = state === 'connected'
  return (
    <section>
      <PageHead title="WebSocket client" />
      <form class="card inline-form" aria-label="Connection" onSubmit={(e) => e.preventDefault()}>
        <Field label="Broker URL" value={url} onInput={setUrl} size={36} disabled={state !== 'disconnected'} />
        <Field label="Client id" value={clientId} onInput={setClientId} disabled={state !== 'disconnected'} />
        <Field label="User name" value={username} onInput={setUsername} disabled={state !== 'disconnected'} autocomplete="off" />
        <Field label="Password" type="password" value={password} onInput={setPassword} disabled={state !== 'disconnected'} autocomplete="off" />
        {connected
          ? <Action label="Disconnect" busy="Disconnecting…" run={disconnect} />
          : <Action label="Connect" busy="Connecting…" kind="primary" disabled={url === ''} run={connect} onError={setError} />}
        <span role="status" class={connected ? 'good' : 'muted'}>{state}</span>
      </form>
      <ErrorLine message={error} />
      <div class="columns">
        <form class="card stacked" aria-label="Subscribe" onSubmit={(e) => e.preventDefault()}>
          <h2>Subscribe</h2>
          <Field label="Topic filter" value={filter} onInput={setFilter} />
          <Select label="QoS" value={subQos} options={QOS} onChange={setSubQos} />
          <Action label="Subscribe" busy="Subscribing…" disabled={!connected || filter === ''} run={subscribe} />
          <ul class="plain" aria-label="Subscribed">
            {subs.map((s) => <li key={s.topic}><code>{s.topic}</code> (QoS {s.qos}) <Action label="Unsubscribe" busy="…" run={async () => await unsubscribe(s.topic)} /></li>)}
          </ul>
        </form>
        <form class="card stacked" aria-label="Publish" onSubmit={(e) => e.preventDefault()}>
          <h2>Publish</h2>
          <Field label="Topic" value={topic} onInput={setTopic} />
          <label class="field"><span>Payload</span><textarea rows={3} value={payload} onInput={(e) => setPayload((e.target as HTMLTextAreaElement).value)} /></label>
          <Select label="QoS" value={pubQos} options={QOS} onChange={setPubQos} />
          <label class="check"><input type="checkbox" checked={retain} onChange={(e) => setRetain((e.target as HTMLInputElement).checked)} /> Retain</label>
          <Action label="Publish" busy="Publishing…" kind="primary" disabled={!connected || topic === ''} run={publish} />
        </form>
      </div>
      <h2>Messages received</h2>
      <Table<Received> label="Messages received" empty="No message yet" rows={messages} rowKey={(m) => String(m.n)}
        columns={[
          { title: 'At', render: (m) => m.at },
          { title: 'Topic', render: (m) => <code>{m.topic}</code> },
          { title: 'Payload', render: (m) => <code class="payload">{m.payload}</code> },
          { title: 'QoS', render: (m) => m.qos },
          { title: 'Retained', render: (m) => m.retain ? 'yes' : '' }
        ]} />
    </section>
  )
}
