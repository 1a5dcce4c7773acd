/**
 * TypeBox schemas of the messages between the front process and node actors (actor.ts). Actors
 * trust each other, so these are checked in tests (and usable for debugging), not on every
 * hot-path message; kept apart from actor.ts so workers never load typebox.
 */
import Type, { type Static } from 'typebox';

export const ClientOpSchema = Type.Union([
  Type.Object({
    op: Type.Literal('write'),
    key: Type.String(),
    value: Type.String(),
    client_id: Type.Optional(Type.String()),
  }),
  Type.Object({ op: Type.Literal('delete'), key: Type.String(), client_id: Type.Optional(Type.String()) }),
  Type.Object({ op: Type.Literal('read'), key: Type.String(), client_id: Type.Optional(Type.String()) }),
  Type.Object({
    op: Type.Literal('batch'),
    entries: Type.Array(Type.Object({ key: Type.String(), value: Type.String() })),
    client_id: Type.Optional(Type.String()),
  }),
]);
export const ClientRequestSchema = Type.Object({ id: Type.Integer(), op: ClientOpSchema });
export type ClientRequestWire = Static<typeof ClientRequestSchema>;

export const ActorOutputSchema = Type.Object({
  replies: Type.Array(Type.Object({ id: Type.Integer(), ok: Type.Boolean() }, { additionalProperties: true })),
  events: Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true })),
});
