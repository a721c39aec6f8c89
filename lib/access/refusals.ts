// Why the node refuses a connection, as MQTT 3.x CONNACK return codes and the
// MQTT 5 reason codes it chooses; one table for the auth chain and enhanced auth.

/** MQTT 3.x CONNACK return codes and the MQTT 5 reason codes the node chooses (SPEC §7, MQTT 5 §3.2.2.2). */
export const REFUSALS = {
  client_id_not_valid: { returnCode: 2, reasonCode: 0x85 },
  bad_username_or_password: { returnCode: 4, reasonCode: 0x86 },
  not_authorized: { returnCode: 5, reasonCode: 0x87 },
  banned: { returnCode: 5, reasonCode: 0x8a },
  quota_exceeded: { returnCode: 3, reasonCode: 0x97 },
  server_busy: { returnCode: 3, reasonCode: 0x89 },
  server_unavailable: { returnCode: 3, reasonCode: 0x88 }
} as const
export type Refusal = keyof typeof REFUSALS
