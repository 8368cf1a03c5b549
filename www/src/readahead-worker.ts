// The read-ahead helper (readahead.ts): a worker of the decode worker that reads the pieces it is
// asked for with FileReaderSync into its slot of the shared buffer, then marks the slot DONE (or
// FAILED) and wakes the decode worker. It holds no state of its own beyond the two buffers; a
// failed read is only marked, the core then reads those bytes itself and reports the error.

import { DONE, FAILED, READY_AT, SLOT_BYTES, SLOTS, type ReadAheadRequest } from './readahead.ts';

interface HelperScope {
  onmessage: ((ev: MessageEvent<ReadAheadRequest>) => void) | null;
}
/** FileReaderSync (workers only; not in the DOM lib that is type-checked). */
declare const FileReaderSync: new () => { readAsArrayBuffer(blob: Blob): ArrayBuffer };

const reader = new FileReaderSync();
let control: Int32Array | null = null;
let data: SharedArrayBuffer | null = null;

(self as unknown as HelperScope).onmessage = (ev) => {
  const m = ev.data;
  if (m.op === 'init') {
    control = new Int32Array(m.control);
    data = m.data;
    Atomics.store(control, READY_AT, 1);
    return;
  }
  if (control === null || data === null) return;
  let state = FAILED;
  let n = 0;
  try {
    const bytes = new Uint8Array(reader.readAsArrayBuffer(m.blob.slice(m.start, m.end)));
    if (bytes.length <= SLOT_BYTES) {
      new Uint8Array(data, m.slot * SLOT_BYTES, bytes.length).set(bytes);
      n = bytes.length;
      state = DONE;
    }
  } catch {
    // Marked FAILED: the decode worker reads these bytes itself and names the error.
  }
  Atomics.store(control, SLOTS + m.slot, n);
  Atomics.store(control, m.slot, state);
  Atomics.notify(control, m.slot);
};
