// `broker_ctl retainer info | topics | clean [<topic filter>]`, with EMQ X
// 3.x's outputs (emqx_retainer_cli): `retained/total: N`, one topic a line,
// `Cleaned N retained messages`.
import { CtlError, output, usageError, type CtlCommand } from '../../lib/plugin-kit/index.js'
import type { Keeper } from './keeper.js'

export function retainerCommand (keeper: Keeper): CtlCommand {
  return {
    name: 'retainer',
    usage: [
      ['retainer info', 'Show the count of retained messages'],
      ['retainer topics', 'Show all topics of retained messages'],
      ['retainer clean', 'Clean all retained messages'],
      ['retainer clean <Topic>', 'Clean retained messages by the specified topic filter']
    ],
    run: async (args) => {
      const [sub, ...rest] = args
      if (sub === 'info' && rest.length === 0) {
        await keeper.storage.recount()
        const total = keeper.count()
        return output(`retained/total: ${total}`, { total })
      }
      if (sub === 'topics' && rest.length === 0) {
        const topics: string[] = []
        for await (const topic of keeper.storage.topics()) topics.push(topic)
        topics.sort()
        return output(topics.join('\n'), topics)
      }
      if (sub === 'clean' && rest.length <= 1) {
        let cleaned: number
        try {
          cleaned = await keeper.clean(rest[0])
        } catch (err) {
          throw new CtlError((err as Error).message)
        }
        return output(`Cleaned ${cleaned} retained messages`, { cleaned })
      }
      throw usageError(`bad arguments: ${args.join(' ')}`)
    }
  }
}
