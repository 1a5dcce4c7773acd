/**
 * The channel chosen on the diagram: clicking a lane's name picks the channel's sender, the next
 * click its receiver, so faults are set from the diagram itself (the faults panel reads these).
 * Page-wide UI state only; the lab knows nothing of it.
 */
import { signal } from '@preact/signals';

export const channelFrom = signal('');
export const channelTo = signal('');
/** Which end the next click on a lane picks. */
export const nextEnd = signal<'from' | 'to'>('from');

/** A click on a lane's name: the sender first, then the receiver (a different process). */
export function pickLane(id: string): void {
  if (nextEnd.value === 'from' || id === channelFrom.value) {
    channelFrom.value = id;
    if (channelTo.value === id) channelTo.value = '';
    nextEnd.value = 'to';
  } else {
    channelTo.value = id;
    nextEnd.value = 'from';
  }
}
