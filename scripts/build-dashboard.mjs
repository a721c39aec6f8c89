// Builds the dashboard's front end (plugins/broker_dashboard/ui/src) into
// ui/dist: index.html and assets/ (one ES module bundle, split where a page
// loads a large library lazily, and one CSS file). Everything the browser
// needs is in there: the dashboard never loads anything from outside.
import { build } from 'esbuild'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ui = join(dirname(fileURLToPath(import.meta.url)), '..', 'plugins', 'broker_dashboard', 'ui')
const dist = join(ui, 'dist')

const INDEX = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Broker dashboard</title>
<link rel="stylesheet" href="/assets/main.css">
<script type="module" src="/assets/main.js"></script>
</head>
<body>
<div id="app"></div>
<noscript>The dashboard needs JavaScript.</noscript>
</body>
</html>
`

await rm(dist, { recursive: true, force: true })
await mkdir(join(dist, 'assets'), { recursive: true })
await build({
  entryPoints: { main: join(ui, 'src', 'main.tsx') },
  outdir: join(dist, 'assets'),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2022'],
  minify: true,
  sourcemap: true,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  chunkNames: 'chunk-[hash]',
  logLevel: 'warning',
  tsconfig: join(ui, 'tsconfig.json')
})
await writeFile(join(dist, 'index.html'), INDEX)
