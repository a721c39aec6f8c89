// The kit's CoAP layer (RFC 7252, RFC 7641's Observe option, RFC 7959
// block-wise transfer), for the gateways that speak CoAP (broker_coap, and
// broker_lwm2m may move onto it): the message codec (message.ts), the Block
// option and the bounded stores of block-wise state (block.ts), the
// transmission parameters (transmission.ts) and an endpoint over any
// datagram transport (endpoint.ts). Plugins reach it as `coap` from the kit:
// `import { coap } from '../../lib/plugin-kit/index.js'`.
export * from './message.js'
export * from './block.js'
export * from './transmission.js'
export * from './endpoint.js'
