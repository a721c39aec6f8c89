// Charts of a bench run as a PNG: uPlot (the dashboard's plotting library)
// draws them in Debian's chromium, driven by playwright-core, and the page is
// captured. The HTML is kept beside the PNG, so the figures stay readable where
// no browser is installed.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { chromium } from 'playwright-core'

export interface Chart {
  title: string
  /** the y axis' unit */
  unit: string
  series: Array<{ label: string, values: Array<number | null> }>
}

const CHROMIUM = '/usr/bin/chromium'
const WIDTH = 1000
const CHART_HEIGHT = 260
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd']

function page (title: string, xSeconds: number[], charts: Chart[]): string {
  const require = createRequire(import.meta.url)
  const script = readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8')
  const style = readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8')
  const data = JSON.stringify({ x: xSeconds, charts, width: WIDTH, height: CHART_HEIGHT, colours: COLOURS })
  const escape = (text: string): string => text.replace(/[<&]/g, (c) => c === '<' ? '&lt;' : '&amp;')
  return `<!doctype html><meta charset="utf-8"><title>${escape(title)}</title><style>${style}
body{font:14px sans-serif;margin:16px;background:#fff}h1{font-size:18px}</style>
<h1>${escape(title)}</h1><div id="charts"></div>
<script>${script}</script>
<script>
const d = ${data.replace(/</g, '\\u003c')}
for (const chart of d.charts) {
  const series = [{ label: 'time (s)' }, ...chart.series.map((s, i) => ({ label: s.label, stroke: d.colours[i % d.colours.length], width: 2 }))]
  new uPlot({ title: chart.title, width: d.width, height: d.height, scales: { x: { time: false } }, series,
    axes: [{ label: 'seconds since start' }, { label: chart.unit, size: 70 }] },
    [d.x, ...chart.series.map((s) => s.values)], document.getElementById('charts'))
}
document.body.dataset.ready = '1'
</script>`
}

/** Writes `<base>.html` and, when chromium is installed, `<base>.png`; gives the files written. */
export async function plot (base: string, title: string, xSeconds: number[], charts: Chart[]): Promise<string[]> {
  const html = `${base}.html`
  writeFileSync(html, page(title, xSeconds, charts))
  if (!existsSync(CHROMIUM)) return [html]
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
  try {
    const tab = await browser.newPage({ viewport: { width: WIDTH + 40, height: 200 } })
    await tab.goto(`file://${html}`)
    await tab.waitForSelector('body[data-ready="1"]')
    await tab.screenshot({ path: `${base}.png`, fullPage: true })
  } finally {
    await browser.close()
  }
  return [html, `${base}.png`]
}
