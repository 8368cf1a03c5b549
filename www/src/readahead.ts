// Read-ahead for the decode worker (crate/src/wasm.rs `ReadAhead`, installed by worker.ts in a
// cross-origin isolated page). The core reads picked files with Blob.slice + FileReaderSync, which
// blocks its worker for ≈ 10 ms a call plus ≈ 2.5 ms per MiB (docs/ARCHITECTURE.md "Memory"): on a
// 200 MB trace.json that is ≈ 0.6 s of a 3.8 s decode. Here a helper worker (readahead-worker.ts)
// reads the piece after each large read into a SharedArrayBuffer while the core decodes this one;
// the next read then waits only for what is not read yet and copies the bytes into wasm memory.
//
// The bytes never differ: a read the slots do not hold whole, a helper that failed to read, or a
// helper that does not answer within WAIT_MS, all end in the core reading the bytes itself
// (which also names any read error). Memory: SLOTS × SLOT_BYTES of shared memory per worker,
// touched only by pieces read ahead, and the helper.

/** Bytes a slot holds: the streaming decoders' piece in the page (crate/src/source.rs `BROWSER_READ`). */
export const SLOT_BYTES = 16 << 20;
/** Pieces read ahead at once: one for each of two streams read in turn (an NTFF's buffers, a trace's two passes). */
export const SLOTS = 2;
/** Slot states in the control array (its first SLOTS Int32s; the next SLOTS hold the bytes read, then READY_AT). */
export const IDLE = 0;
export const READING = 1;
export const DONE = 2;
export const FAILED = 3;
/** Index in the control array the helper sets to 1 once it has the buffers. */
export const READY_AT = 2 * SLOTS;

/** A read this long or longer (a streaming decoder's piece, not a window refill or a DMA run's) asks for the piece after it. */
const PREFETCH_MIN = 4 << 20;
/** Longest wait for a piece being read (a 16 MiB read takes ≈ 50 ms); past it the helper is taken for gone and reads are direct from then on. */
const WAIT_MS = 10_000;

/** Messages to the helper. */
export type ReadAheadRequest =
  | { op: 'init'; control: SharedArrayBuffer; data: SharedArrayBuffer }
  | { op: 'read'; slot: number; blob: Blob; start: number; end: number };

/** What the read-ahead did during one decode (results' `readAhead`). */
export interface ReadAheadStats {
  /** Reads served from a slot. */
  served: number;
  /** Reads offered that no slot held whole (read directly by the core). */
  missed: number;
  /** Pieces the helper was asked to read. */
  asked: number;
  /** Milliseconds the core waited for a piece still being read. */
  waitMs: number;
}

interface Piece {
  blob: Blob;
  start: number;
  end: number;
  /** Order of asking (the oldest piece not being read is replaced first). */
  seq: number;
}

/** The part of a Worker the read-ahead uses (a test may stand in for it). */
export interface Helper {
  postMessage(message: ReadAheadRequest): void;
}

export class ReadAhead {
  private readonly control: Int32Array;
  private readonly data: SharedArrayBuffer;
  private readonly pieces: (Piece | null)[] = new Array<Piece | null>(SLOTS).fill(null);
  private seq = 0;
  /** Set when the helper stopped answering: every read is direct from then on. */
  private gone = false;
  readonly stats: ReadAheadStats = { served: 0, missed: 0, asked: 0, waitMs: 0 };

  /**
   * `helper` must be made outside a synchronous core call: Chromium loads a nested worker's script
   * through its parent's event loop, so one made during a decode would start only after it. Until
   * the helper marks itself started (READY_AT) nothing is asked of it; `waitMs`: longest wait for a
   * piece being read (WAIT_MS; tests shorten it).
   */
  constructor(
    private readonly helper: Helper,
    private readonly waitMs = WAIT_MS,
  ) {
    const control = new SharedArrayBuffer((2 * SLOTS + 1) * Int32Array.BYTES_PER_ELEMENT);
    // Reserved address space: pages are touched only when a piece is read into them.
    this.data = new SharedArrayBuffer(SLOTS * SLOT_BYTES);
    this.control = new Int32Array(control);
    helper.postMessage({ op: 'init', control, data: this.data });
  }

  /**
   * Fills `buf` with bytes `at .. at + buf.length` of `blob` from a slot and returns its length,
   * or returns -1 when no slot holds them all (the core then reads them). Then, after a read of
   * PREFETCH_MIN bytes or more, asks the helper for the next piece of the same length.
   */
  read(blob: Blob, at: number, buf: Uint8Array): number {
    if (this.gone) return -1;
    const end = at + buf.length;
    let n = -1;
    const k = this.holding(blob, at, end);
    if (k >= 0) {
      const state = this.settle(k);
      const p = this.pieces[k] ?? null;
      if (state === DONE && p !== null && p.start + Atomics.load(this.control, SLOTS + k) >= end) {
        buf.set(new Uint8Array(this.data, k * SLOT_BYTES + (at - p.start), buf.length));
        n = buf.length;
      }
      // Used (or failed): the slot is free for the next piece.
      if (state !== READING) this.pieces[k] = null;
    }
    if (n >= 0) this.stats.served++;
    else this.stats.missed++;
    if (!this.gone && buf.length >= PREFETCH_MIN && end < blob.size) this.ask(blob, end, Math.min(end + buf.length, blob.size));
    return n;
  }

  /** The slot whose piece holds `start .. end` of `blob`, or -1. */
  private holding(blob: Blob, start: number, end: number): number {
    return this.pieces.findIndex((p) => p !== null && p.blob === blob && p.start <= start && end <= p.end);
  }

  /** Slot `k`'s state once the helper is done with it (Atomics.wait: the core is inside a synchronous call, no message can reach this worker). */
  private settle(k: number): number {
    const control = this.control;
    let s = Atomics.load(control, k);
    if (s !== READING) return s;
    const t0 = performance.now();
    while (s === READING) {
      const left = this.waitMs - (performance.now() - t0);
      if (left <= 0) {
        this.gone = true;
        break;
      }
      Atomics.wait(control, k, READING, left);
      s = Atomics.load(control, k);
    }
    this.stats.waitMs += performance.now() - t0;
    return s;
  }

  /** Asks the helper for `start .. end` of `blob` into a free slot, or the oldest one not being read; nothing when none is. */
  private ask(blob: Blob, start: number, end: number): void {
    if (end - start > SLOT_BYTES || this.holding(blob, start, end) >= 0) return;
    if (Atomics.load(this.control, READY_AT) !== 1) return;
    let k = this.pieces.indexOf(null);
    if (k < 0) {
      let oldest = Infinity;
      for (let i = 0; i < SLOTS; i++) {
        const p = this.pieces[i] as Piece;
        if (Atomics.load(this.control, i) !== READING && p.seq < oldest) {
          oldest = p.seq;
          k = i;
        }
      }
    }
    if (k < 0) return;
    this.pieces[k] = { blob, start, end, seq: ++this.seq };
    Atomics.store(this.control, k, READING);
    this.helper.postMessage({ op: 'read', slot: k, blob, start, end });
    this.stats.asked++;
  }
}
