/**
 * TypeBox schemas of the clock lab's HTTP request bodies, checked at the edge by the HTTP adapter
 * (a failure is a 400 naming the field). Shapes only; the lab decides the domain rules.
 */
import Type from 'typebox';
import { ProcessIdSchema } from './config.js';
import {
  channelDelayMsMax,
  eventLabelCharsMax,
  kvValueCharsMax,
  kvVersionCounterMax,
  messageAmountMax,
  payloadCharsMax,
  processCountMax,
} from './limits.js';

const ProcessId = ProcessIdSchema;

export const ProcessBody = Type.Object(
  {
    id: ProcessId,
    clock_type: Type.Optional(Type.Union([Type.Literal('scalar'), Type.Literal('vector'), Type.Literal('matrix')])),
  },
  { additionalProperties: false },
);

export const EventBody = Type.Object(
  { label: Type.Optional(Type.String({ maxLength: eventLabelCharsMax })) },
  { additionalProperties: false },
);

export const MessageBody = Type.Object(
  {
    from: ProcessId,
    to: ProcessId,
    payload: Type.String({ maxLength: payloadCharsMax }),
    /** Optional: an amount moved from sender to receiver (the bank-transfer demo). */
    amount: Type.Optional(Type.Integer({ minimum: 0, maximum: messageAmountMax })),
  },
  { additionalProperties: false },
);

export const BroadcastBody = Type.Object(
  { from: ProcessId, payload: Type.String({ maxLength: payloadCharsMax }) },
  { additionalProperties: false },
);

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

export const DeliveryBody = Type.Object(
  { mode: Type.Union([Type.Literal('causal'), Type.Literal('immediate')]) },
  { additionalProperties: false },
);

export const KvWriteBody = Type.Object(
  {
    value: Type.String({ maxLength: kvValueCharsMax }),
    writer: ProcessId,
    /** Optional: apply a write made earlier with this version vector (replay); the writer's clock does not move. */
    version: Type.Optional(
      Type.Record(ProcessId, Type.Integer({ minimum: 0, maximum: kvVersionCounterMax }), {
        maxProperties: processCountMax,
      }),
    ),
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
