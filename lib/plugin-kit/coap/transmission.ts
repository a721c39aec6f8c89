// CoAP's transmission parameters (RFC 7252 §4.8) and the times derived
// from them (§4.8.2): how long a CON is retransmitted, how long a message
// id is remembered for deduplication.

export interface TransmissionParameters {
  /** ACK_TIMEOUT, ms (RFC default 2000) */
  ackTimeoutMs: number
  /** ACK_RANDOM_FACTOR (RFC default 1.5) */
  ackRandomFactor: number
  /** MAX_RETRANSMIT (RFC default 4) */
  maxRetransmit: number
}

export const DEFAULT_TRANSMISSION: Readonly<TransmissionParameters> = Object.freeze({ ackTimeoutMs: 2000, ackRandomFactor: 1.5, maxRetransmit: 4 })

/** MAX_LATENCY: 100 s */
export const MAX_LATENCY_MS = 100_000

/** The first wait for an ACK: random in [ACK_TIMEOUT, ACK_TIMEOUT × ACK_RANDOM_FACTOR]; each retransmission doubles it (§4.2). */
export function initialTimeout (p: TransmissionParameters, random = Math.random()): number {
  return p.ackTimeoutMs * (1 + random * (p.ackRandomFactor - 1))
}

/** MAX_TRANSMIT_SPAN: ACK_TIMEOUT × (2 ** MAX_RETRANSMIT − 1) × ACK_RANDOM_FACTOR (45 s by default). */
export function maxTransmitSpan (p: TransmissionParameters): number {
  return p.ackTimeoutMs * (2 ** p.maxRetransmit - 1) * p.ackRandomFactor
}

/** EXCHANGE_LIFETIME: MAX_TRANSMIT_SPAN + 2 × MAX_LATENCY + PROCESSING_DELAY (ACK_TIMEOUT): 247 s by default. */
export function exchangeLifetime (p: TransmissionParameters): number {
  return maxTransmitSpan(p) + 2 * MAX_LATENCY_MS + p.ackTimeoutMs
}

/** NON_LIFETIME: MAX_TRANSMIT_SPAN + MAX_LATENCY (145 s by default). */
export function nonLifetime (p: TransmissionParameters): number {
  return maxTransmitSpan(p) + MAX_LATENCY_MS
}
