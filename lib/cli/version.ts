// What `--version` prints: the install's version (package.json, as $SYS and
// the API report it) and the Node.js running it.
import { VERSION } from '../sys/node-info.js'

export function versionLine (program: string): string {
  return `${program} ${VERSION} (Node.js ${process.version})`
}
