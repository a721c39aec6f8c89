// The delivery thread's scheduling policy. On Linux it runs under SCHED_BATCH
// (set with util-linux's `chrt`, as Node has no call for it): the kernel then
// never lets its wake-ups (a batch handed over, answers read) preempt the
// thread that is running, so on a busy machine the event loop serving MQTT is
// not interrupted each time the thread has a few microseconds of work, while
// the thread keeps its fair share of CPU time (a lower priority, `nice`, would
// take that away, and the queue would fill). The web-hook bench's QoS 1 load
// gave 0.91–0.94 of its rate without the plugin with it, 0.80–0.95 without it
// (bench/README.md). Anywhere else, or without chrt, nothing changes.
import { execFile } from 'node:child_process'

/** The calling thread's id as the kernel knows it (Linux), else undefined: the worker reads it and hands it over. */
export const threadIdSource = `(() => { try { return Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop()) } catch { return undefined } })()`

/** Puts thread `tid` of this process under SCHED_BATCH; answers why not when it could not. */
export async function runAsBatch (tid: number): Promise<string | undefined> {
  return await new Promise((resolve) => {
    execFile('chrt', ['--batch', '--pid', '0', String(tid)], { timeout: 5000 }, (err, _stdout, stderr) => {
      resolve(err === null ? undefined : (stderr.trim() || err.message))
    })
  })
}
