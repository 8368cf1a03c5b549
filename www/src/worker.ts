// The worker owns the wasm core and one Session (the picked files). It never touches the DOM; the
// page talks to it through protocol.ts. Files arrive as File/Blob handles: the core reads them in
// slices (FileReaderSync), so a multi-GB NTFF is never read whole here or on the page.

import type { Inventory, WasmModule, WasmSession } from './api.ts';
import type { CrashInfo, Envelope, FaultSpec, FromWorker } from './protocol.ts';

/** The part of DedicatedWorkerGlobalScope used here (the DOM lib is the one type-checked). */
interface WorkerScope {
  postMessage(message: FromWorker, transfer?: Transferable[]): void;
  onmessage: ((ev: MessageEvent<Envelope>) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  onunhandledrejection: ((ev: PromiseRejectionEvent) => void) | null;
}
const scope = self as unknown as WorkerScope;

let wasm: WasmModule | null = null;
let session: WasmSession | null = null;
/** Key of the processed profile the page shows; released when another one is opened. */
let shown: string | null = null;
/** Set after a wasm trap: the instance may be inconsistent, so refuse further calls (the page restarts the worker). */
let crashed: string | null = null;
/** Text the core's panic hook handed over during the current call (reset per call). */
let lastPanic: string | null = null;
/** The instance's exports; `memory` sizes a failure (is the 4 GiB wasm32 memory full?). */
let exports: { memory?: WebAssembly.Memory } = {};
/** Crash-containment test hook from the page URL (protocol.ts FaultSpec); null for users. */
let fault: FaultSpec | null = null;

function post(msg: FromWorker, transfer: Transferable[] = []): void {
  scope.postMessage(msg, transfer);
}

function describe(e: unknown): string {
  if (e instanceof Error) return e.message || e.name;
  if (typeof e === 'string') return e;
  try {
    return JSON.stringify(e);
  } catch {
    return String(e);
  }
}

/** Inventory of the current session (from scan), to match the fault hook's `on` against NTFF paths. */
let scanned: Inventory | null = null;

/** NTFF path of device `deviceIndex` of profile `profileId` ('' when unknown). */
function ntffOf(profileId: string, deviceIndex: number): string {
  return scanned?.profiles.find((p) => p.id === profileId)?.devices[deviceIndex]?.ntff ?? '';
}

/** NTFF path of the device profile on screen (`shown`), for the table steps of the fault hook. */
let shownNtff = '';

/** The fault kind to inject into `process(profileId, deviceIndex)`, or '' (always '' for users). */
function faultFor(profileId: string, deviceIndex: number): string {
  if (fault === null || (fault.step ?? 'process') !== 'process') return '';
  return ntffOf(profileId, deviceIndex).includes(fault.on) ? fault.kind : '';
}

/** Arms the fault hook for a read of `table` in `step` ('table': Parquet export, 'columns': column read) of the profile on screen. */
function armTableFault(step: 'table' | 'columns', table: string): void {
  if (fault === null || fault.step !== step || fault.table !== table || !shownNtff.includes(fault.on)) return;
  core().arm_test_fault?.(fault.kind, 'table');
}

/** Did `e` leave the wasm instance unusable? Traps, panics (which abort), RangeErrors (out of memory, stack). */
function crashOf(e: unknown): CrashInfo | null {
  const text = e instanceof Error ? `${e.name}: ${e.message}` : describe(e);
  const broken =
    e instanceof WebAssembly.RuntimeError ||
    e instanceof RangeError ||
    lastPanic !== null ||
    // wasm-bindgen's guard when a Session is still borrowed by a call that trapped.
    text.includes('recursive use of an object');
  if (!broken) return null;
  return { panic: lastPanic, trap: text, memoryBytes: exports.memory?.buffer.byteLength ?? 0 };
}

function core(): WasmModule {
  if (crashed !== null) throw new Error(`the wasm core crashed earlier (${crashed}); this worker is being replaced`);
  if (wasm === null) throw new Error('the wasm core is not loaded yet');
  return wasm;
}

function newSession(): WasmSession {
  const m = core();
  session?.free();
  session = new m.Session();
  shown = null;
  return session;
}

function current(): WasmSession {
  core();
  if (session === null) throw new Error('no capture loaded');
  return session;
}

/** Copies `bytes` into a buffer of its own (wasm memory views must not be transferred) and posts it. */
function replyBytes(id: number, bytes: Uint8Array): void {
  const own = bytes.slice();
  post({ kind: 'reply', id, ok: true, value: own }, [own.buffer]);
}

async function handle(msg: Envelope): Promise<void> {
  const { id } = msg;
  switch (msg.op) {
    case 'init': {
      if (wasm === null) {
        const mod = (await import(/* @vite-ignore */ msg.pkgUrl)) as WasmModule;
        exports = ((await mod.default()) ?? {}) as { memory?: WebAssembly.Memory };
        mod.set_panic_reporter?.((text) => {
          lastPanic = text;
        });
        wasm = mod;
      }
      fault = msg.fault ?? null;
      post({ kind: 'reply', id, ok: true, value: { version: core().version() } });
      return;
    }
    case 'load': {
      const s = newSession();
      for (const f of msg.files) s.add_file(f.path, f.file);
      scanned = s.scan();
      post({ kind: 'reply', id, ok: true, value: scanned });
      return;
    }
    case 'demo': {
      const m = core();
      const s = newSession();
      for (const f of m.demo_files()) s.add_bytes(f.path, f.bytes);
      scanned = s.scan();
      post({ kind: 'reply', id, ok: true, value: scanned });
      return;
    }
    case 'process': {
      const s = current();
      // The page shows one device profile at a time: free the previous one's tables first.
      if (shown !== null) s.release(shown);
      shown = null;
      // Test hook only: the core fails at its next NTFF progress report, inside this call.
      core().arm_test_fault?.(faultFor(msg.profileId, msg.deviceIndex), 'process');
      shownNtff = '';
      const result = s.process(msg.profileId, msg.deviceIndex, (stage, done, total) => {
        post({ kind: 'progress', id, stage, done: Number(done), total: Number(total) });
      });
      shown = result.key;
      shownNtff = ntffOf(msg.profileId, msg.deviceIndex);
      post({ kind: 'reply', id, ok: true, value: result });
      return;
    }
    case 'processSystem': {
      const s = current();
      if (s.process_system === undefined) throw new Error('this build of the core cannot decode system traces');
      // One processed profile at a time, system or device.
      if (shown !== null) s.release(shown);
      shown = null;
      const result = s.process_system(msg.profileId, (stage, done, total) => {
        post({ kind: 'progress', id, stage, done: Number(done), total: Number(total) });
      });
      shown = result.key;
      post({ kind: 'reply', id, ok: true, value: result });
      return;
    }
    case 'processMemory': {
      const s = current();
      if (s.process_memory === undefined) throw new Error('this build of the core cannot read memory snapshots');
      if (shown !== null) s.release(shown);
      shown = null;
      const result = s.process_memory(msg.path);
      shown = result.key;
      post({ kind: 'reply', id, ok: true, value: result });
      return;
    }
    case 'table': {
      const s = current();
      if (msg.format === 'parquet') armTableFault('table', msg.table);
      const bytes = msg.format === 'ipc' ? s.table_ipc(msg.key, msg.table) : s.table_parquet(msg.key, msg.table);
      replyBytes(id, bytes);
      return;
    }
    case 'columns': {
      // Older cores lack the projection: fall back to the whole table.
      const s = current();
      armTableFault('columns', msg.table);
      replyBytes(id, s.table_ipc_columns ? s.table_ipc_columns(msg.key, msg.table, msg.columns) : s.table_ipc(msg.key, msg.table));
      return;
    }
    case 'rows': {
      const s = current();
      if (s.table_ipc_rows) replyBytes(id, s.table_ipc_rows(msg.key, msg.table, msg.offset, msg.count));
      else replyBytes(id, s.table_ipc(msg.key, msg.table));
      return;
    }
    case 'bundle': {
      replyBytes(id, current().bundle_zip(msg.key));
      return;
    }
    case 'sources': {
      const s = current();
      post({ kind: 'reply', id, ok: true, value: s.sources ? s.sources() : { files: [], loads: [] } });
      return;
    }
    case 'addSources': {
      const s = current();
      if (s.add_source === undefined) throw new Error('this build of the core has no source view');
      const add = s.add_source.bind(s);
      post({ kind: 'reply', id, ok: true, value: msg.files.map((f) => add(f.path, f.file)) });
      return;
    }
    case 'sourceText': {
      const s = current();
      post({ kind: 'reply', id, ok: true, value: s.source_text?.(msg.path) ?? null });
      return;
    }
    case 'sourceResolve': {
      const s = current();
      const resolve = (l: string) => s.source_resolve?.(l) ?? { location: l, debug_path: l, line: 0, files: [] };
      post({ kind: 'reply', id, ok: true, value: msg.locations.map(resolve) });
      return;
    }
    case 'sourceHeat': {
      const s = current();
      if (s.source_heat === undefined) throw new Error('this build of the core has no source heat');
      post({ kind: 'reply', id, ok: true, value: s.source_heat(msg.key) });
      return;
    }
    case 'lodTracks': {
      const s = current();
      if (s.lod_tracks === undefined) throw new Error('this build of the core has no timeline summaries');
      post({ kind: 'reply', id, ok: true, value: s.lod_tracks(msg.key) });
      return;
    }
    case 'lod': {
      const s = current();
      if (s.lod === undefined) throw new Error('this build of the core has no timeline summaries');
      // A Float64Array returned by wasm-bindgen is a copy: transfer it.
      const out = s.lod(msg.key, Uint32Array.from(msg.tracks), msg.t0, msg.t1, msg.n);
      post({ kind: 'reply', id, ok: true, value: out }, [out.buffer]);
      return;
    }
    case 'window': {
      const s = current();
      if (s.table_window === undefined) throw new Error('this build of the core has no windowed reads');
      armTableFault('columns', msg.table);
      const w = s.table_window(msg.key, msg.table, msg.columns, msg.t0, msg.t1, msg.limit);
      const ipc = w.ipc.slice();
      post({ kind: 'reply', id, ok: true, value: { ...w, ipc } }, [ipc.buffer]);
      return;
    }
    case 'conform': {
      const s = current();
      if (s.conform === undefined) throw new Error('this build of the core cannot compare with JSON exports');
      post({ kind: 'reply', id, ok: true, value: s.conform(msg.key, msg.exportJson) });
      return;
    }
  }
}

scope.onmessage = (ev: MessageEvent<Envelope>) => {
  const msg = ev.data;
  lastPanic = null;
  handle(msg).catch((e: unknown) => {
    // A Rust panic surfaces as WebAssembly.RuntimeError ("unreachable") after the panic hook ran:
    // report both, never hang; the page then replaces this worker (client.ts).
    const crash = crashOf(e);
    if (crash === null) {
      post({ kind: 'reply', id: msg.id, ok: false, error: describe(e) });
      return;
    }
    crashed = crash.panic ?? crash.trap;
    post({ kind: 'reply', id: msg.id, ok: false, error: describe(e), crash });
  });
};

scope.onerror = (ev: unknown) => {
  post({ kind: 'fatal', error: describe(ev) });
};
scope.onunhandledrejection = (ev: PromiseRejectionEvent) => {
  post({ kind: 'fatal', error: describe(ev.reason) });
};
