// A live line chart (uPlot) over time: `ts` in unix seconds, one line per series.
import type { JSX } from 'preact'
import { useEffect, useRef } from 'preact/hooks'
import uPlot from 'uplot'

export interface ChartSeries { label: string, values: number[], color: string }

export function Chart ({ title, ts, series }: { title: string, ts: number[], series: ChartSeries[] }): JSX.Element {
  const box = useRef<HTMLDivElement>(null)
  const plot = useRef<uPlot | null>(null)
  const data = [ts, ...series.map((s) => s.values)] as uPlot.AlignedData
  const shape = series.map((s) => s.label).join('|')

  useEffect(() => {
    const el = box.current
    if (el === null) return
    const chart = new uPlot({
      width: Math.max(200, el.clientWidth),
      height: 180,
      legend: { show: true },
      scales: { x: { time: true } },
      axes: [{ stroke: '#555' }, { stroke: '#555', size: 56 }],
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, points: { show: false } }))]
    }, data, el)
    plot.current = chart
    const resized = new ResizeObserver(() => chart.setSize({ width: Math.max(200, el.clientWidth), height: 180 }))
    resized.observe(el)
    return () => { resized.disconnect(); chart.destroy(); plot.current = null }
  }, [shape])

  useEffect(() => { plot.current?.setData(data) })

  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} role="img" aria-label={`${title}: chart of the last hour`} />
    </figure>
  )
}
