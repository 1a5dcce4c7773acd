/**
 * TypeBox schemas of the clock lab's HTTP request bodies, checked at the edge by the HTTP adapter
 * (a failure is a 400 naming the field). Shapes only; the lab decides the domain rules.
 */
import Type from 'typebox';
import { processIdPattern } from './config.js';
import { channelDelayMsMax, kvValueCharsMax, payloadCharsMax, processCountMax } from './limits.js';

const ProcessId = Type.String({ pattern: processIdPattern });

export const ProcessBody = Type.Object(
  {
    id: ProcessId,
    clock_type: Type.Optional(Type.Union([Type.Literal('scalar'), Type.Literal('vector'), Type.Literal('matrix')])),
  },
  { additionalProperties: false },
);

export const EventBody = Type.Object({ label: Type.Optional(Type.String({ maxLength: 256 })) }, { additionalProperties: false });

export const MessageBody = Type.Object(
  {
    from: ProcessId,
    to: ProcessId,
    payload: Type.String({ maxLength: payloadCharsMax }),
    /** Optional: an amount moved from sender to receiver (the bank-transfer demo). */
    amount: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
  },
  { additionalProperties: false },
);

export const BroadcastBody = Type.Object({ from: ProcessId, payload: Type.String({ maxLength: payloadCharsMax }) }, { additionalProperties: false });

export const FaultsBody = Type.Object(
  {
    delay_ms: Type.Optional(Type.Number({ minimum: 0, maximum: channelDelayMsMax })),
    drop_rate: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    reorder: Type.Optional(Type.Boolean()),
    reorder_window_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: channelDelayMsMax })),
  },
  { additionalProperties: false },
);

export const PartitionBody = Type.Object(
  {
    side_a: Type.Array(ProcessId, { minItems: 1, maxItems: processCountMax }),
    side_b: Type.Array(ProcessId, { minItems: 1, maxItems: processCountMax }),
  },
  { additionalProperties: false },
);

export const DeliveryBody = Type.Object({ mode: Type.Union([Type.Literal('causal'), Type.Literal('immediate')]) }, { additionalProperties: false });

export const KvWriteBody = Type.Object(
  {
    value: Type.String({ maxLength: kvValueCharsMax }),
    writer: ProcessId,
    /** Optional: apply a write made earlier with this version vector (replay); the writer's clock does not move. */
    version: Type.Optional(Type.Record(Type.String({ pattern: processIdPattern }), Type.Integer({ minimum: 0 }))),
  },
  { additionalProperties: false },
);

export type ProcessBodyT = Type.Static<typeof ProcessBody>;
export type EventBodyT = Type.Static<typeof EventBody>;
export type MessageBodyT = Type.Static<typeof MessageBody>;
export type BroadcastBodyT = Type.Static<typeof BroadcastBody>;
export type FaultsBodyT = Type.Static<typeof FaultsBody>;
export type PartitionBodyT = Type.Static<typeof PartitionBody>;
export type DeliveryBodyT = Type.Static<typeof DeliveryBody>;
export type KvWriteBodyT = Type.Static<typeof KvWriteBody>;
