// Page entry: folder picking, the worker proxy, and the views. State is shown on <body data-state>:
// boot → idle → loading → processing → ready (or error), which the browser tests wait on.

import { tableFromArrays, tableFromIPC, type Table } from 'apache-arrow';
import type { Inventory, MemoryResult, ProcessResult, ProfileEntry, SystemResult, TableInfo } from './api.ts';
import { CoreClient, CoreCrash } from './client.ts';
import { byId, download, h, nodes } from './dom.ts';
import { bytes, cell, int, ns } from './format.ts';
import { directoryPicker, filesFromDrop, filesFromInput, pickWithDirectoryPicker } from './picker.ts';
import type { FaultSpec, PickedFile } from './protocol.ts';
import { foldedProblems, isPaired, memorySnapshots, renderProfiles } from './views/profiles.ts';
import { MemoryView } from './views/memory.ts';
import { buildMemoryModel } from './views/memory-model.ts';
import {
  buildSystemTimeline,
  deviceLinkRows,
  executionRows,
  extraAttributes,
  linkedDevice,
  linkWording,
  pickExecution,
  SYSTEM_EVENT_COLUMNS,
  type DeviceLinkRow,
} from './views/system-model.ts';
import { SourceView } from './views/source.ts';
import { renderSummary, renderSummaryGroups, THROTTLE_SUMMARY_COLUMNS } from './views/summary.ts';
import { exportsFor, renderConform } from './views/conform.ts';
import { TableBrowser, type TableSource } from './views/tables.ts';
import { buildTimeline } from './views/timeline-model.ts';
import { addDeviceRows, DMA_COLUMNS, PENDING_DMA_COLUMNS, SEMAPHORE_COLUMNS, THROTTLE_COLUMNS } from './views/device-rows.ts';
import { TimelineView } from './views/timeline.ts';
import { DEVICE_LOD_TABLES, detachLod, showDeviceLod, showSystemLod, SYSTEM_LOD_TABLES, wantsLod } from './views/tracks/open.ts';

type State = 'boot' | 'idle' | 'loading' | 'processing' | 'ready' | 'error';

const client = new CoreClient();
const timeline = new TimelineView({ gutter: 190, detailsExtra: (o) => instructionSource(o), detailsExtraFirst: true });
/** Source view: picked .py / .tar.gz files with the device time per line. */
const sourceView = new SourceView({
  sources: () => client.sources(),
  addSources: (files) => client.addSources(files),
  text: (path) => client.sourceText(path),
  resolve: (locations) => client.sourceResolve(locations),
});
/** System profile: runtime/hardware spans per thread and core, CPU and host memory under them. */
const systemView = new TimelineView({
  canvasTestid: 'system-canvas',
  detailsTestid: 'system-details',
  noun: 'event',
  gutter: 210,
  filterPlaceholder: 'Highlight event…',
  tooltip: (o, tr, _name, s, e) => nodes(
    h('div', {}, `${tr.engine}${tr.label ? ` · ${tr.label}` : ''}`),
    h('div', {}, `at ${ns(s)} · duration ${ns(e - s)}`),
    o['pcore_idx'] !== null && o['pcore_idx'] !== undefined ? h('div', {}, `NeuronCore ${cell(o['pcore_idx'])}`) : null,
    extraLine(o),
  ),
  detailsExtra: (o) => systemDetailsExtra(o),
});
/** The system trace on screen: its profile and DeviceProfileList. */
let systemShown: { profile: ProfileEntry; devices: DeviceLinkRow[] } | null = null;
const browser = new TableBrowser();
/** PyTorch memory snapshot on screen (its path). */
const memoryView = new MemoryView();
let memoryShown: string | null = null;

let inventory: Inventory | null = null;
let selected: { profileId: string; deviceIndex: number } | null = null;
/** The picked files (for reading a JSON export on the page); empty for the demo. */
let pickedFiles: PickedFile[] = [];
let coreReady: Promise<void> = Promise.resolve();

function setState(s: State): void {
  document.body.dataset['state'] = s;
}

/** Shows `message` in the error bar; a `cause` that crashed the core also names its step and file there (data-crash-*). */
function showError(message: string, cause?: unknown): void {
  const box = byId('error');
  if (cause instanceof CoreCrash) {
    box.dataset['crashStep'] = cause.step;
    box.dataset['crashFile'] = cause.file ?? '';
  } else {
    delete box.dataset['crashStep'];
    delete box.dataset['crashFile'];
  }
  box.replaceChildren(h('span', {}, message), h('button', { class: 'btn small', onclick: () => (box.hidden = true) }, 'Dismiss'));
  box.hidden = false;
  setState('error');
}

function clearError(): void {
  byId('error').hidden = true;
}

function progress(stage: string | null, done = 0, total = 0): void {
  const box = byId('progress');
  if (stage === null) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  const frac = total > 0 ? Math.min(1, done / total) : 0;
  byId('progress-fill').style.width = total > 0 ? `${(frac * 100).toFixed(1)}%` : '100%';
  byId('progress-fill').classList.toggle('indeterminate', total <= 0);
  // Stages report bytes (NTFF) or steps (NEFF 0/1): bytes only when they look like bytes.
  byId('progress-label').textContent =
    total > 4096 ? `${stage} · ${bytes(done)} of ${bytes(total)}` : total > 1 ? `${stage} · ${done}/${total}` : stage;
  box.dataset['stage'] = stage;
}

function renderInventory(): void {
  if (inventory === null) return;
  renderProfiles(byId('profiles'), inventory, {
    selected,
    onOpen: (p, i) => void openDevice(p, i),
    onOpenSystem: (p) => void openSystem(p),
    systemShown: systemShown?.profile.id ?? null,
    onOpenMemory: (path) => void openMemory(path),
    memoryShown,
  });
}

async function loadFiles(files: PickedFile[] | Promise<PickedFile[]>, what: string): Promise<void> {
  clearError();
  setState('loading');
  progress(`Reading ${what}`);
  try {
    await coreReady;
    const list = await files;
    if (list.length === 0) throw new Error('the folder is empty');
    pickedFiles = list;
    progress(`Scanning ${int(list.length)} files`);
    showInventory(await client.load(list));
  } catch (e) {
    progress(null);
    showError(`Could not read the folder: ${message(e)}`, e);
  }
}

async function loadDemo(): Promise<void> {
  clearError();
  setState('loading');
  progress('Loading the demo capture');
  try {
    await coreReady;
    pickedFiles = [];
    showInventory(await client.demo());
  } catch (e) {
    progress(null);
    showError(`Could not load the demo capture: ${message(e)}`, e);
  }
}

function showInventory(inv: Inventory): void {
  inventory = inv;
  selected = null;
  sourceView.reset();
  document.body.classList.add('has-capture');
  renderInventory();
  clearWorkspace();
  // Open the first device that can be decoded (paired), else the first device at all.
  const candidates = inv.profiles.flatMap((p) =>
    p.devices.flatMap((d, i) => (d.ntff ? [{ p, i, ok: isPaired(d) }] : [])),
  );
  const first = candidates.find((c) => c.ok) ?? candidates[0];
  const snap = memorySnapshots(inv)[0];
  if (first !== undefined) void openDevice(first.p, first.i);
  else if (snap !== undefined) void openMemory(snap.path);
  else {
    const sys = inv.profiles.filter((p) => (p.system_files?.length ?? 0) > 0);
    byId('summary').replaceChildren(
      h('h2', {}, 'No device trace'),
      h('p', { class: 'muted' }, sys.length > 0
        ? 'This folder holds a system trace but no .ntff device trace; this version shows device profiles only. System files found:'
        : 'No .ntff device trace was found in this folder.'),
      h('ul', { class: 'mono small' }, sys.flatMap((p) => (p.system_files ?? []).map((f) => h('li', {}, f)))),
    );
    progress(null);
    setState('ready');
  }
}

function clearWorkspace(): void {
  document.body.classList.remove('has-result', 'has-system', 'has-memory');
  memoryShown = null;
  memoryView.setModel(null, null);
  systemShown = null;
  systemView.setModel(null);
  byId('summary').replaceChildren(h('div', { class: 'muted' }, 'Pick a device profile on the left.'));
  byId('conform').replaceChildren();
  timeline.setModel(null);
  browser.setSource(null, []);
  sourceView.setHeat(null);
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Opens device profile `deviceIndex` of `profile`; with `zoom`, the device timeline then shows the
 * execution an nc_exec_running span ran as (ExecutionInfo, see pickExecution).
 */
async function openDevice(profile: ProfileEntry, deviceIndex: number, zoom?: { execId: number | null }): Promise<void> {
  clearError();
  selected = { profileId: profile.id, deviceIndex };
  systemShown = null;
  leaveMemory();
  renderInventory();
  const device = profile.devices[deviceIndex];
  const name = device?.name ?? device?.ntff ?? `${profile.id} device ${deviceIndex}`;
  setState('processing');
  progress('Processing');
  let result: ProcessResult;
  try {
    result = await client.process(profile.id, deviceIndex, (stage, done, total) => progress(`Decoding ${stage}`, done, total));
  } catch (e) {
    progress(null);
    clearWorkspace();
    showError(`Processing ${name} failed: ${message(e)}`, e);
    return;
  }
  if (selected?.profileId !== profile.id || selected.deviceIndex !== deviceIndex) return;
  const where = profile.root ? `${profile.root} · ` : '';
  renderSummary(byId('summary'), `${profile.profile_type} profile · ${where}${name}`, result);
  if (device !== undefined) {
    const exports = exportsFor(inventory?.files ?? [], pickedFiles.map((f) => ({ path: f.path, file: f.file })), device);
    renderConform(byId('conform'), exports, (bytes) => client.conform(result.key, bytes));
  }
  document.body.classList.remove('has-system');
  systemView.setModel(null);
  document.body.classList.add('has-result');
  const source = tableSource(result, name);
  browser.setSource(source, result.tables);
  void fillSummaryGroups(source, result.tables);
  try {
    progress('Drawing the timeline');
    const hasInstr = result.tables.some((t) => t.name === 'Instruction');
    timeline.rowLoader = (row, table) => source.page(table, row, 1);
    // Rows under the engines come from tables a profile may or may not have (PendingDma is newer).
    const has = (n: string): boolean => result.tables.some((t) => t.name === n && Number(t.rows) > 0);
    const opt = (n: string, cols: string[]): Promise<Table | null> => (has(n) ? source.columns(n, cols) : Promise.resolve(null));
    delete timeline.root.dataset['zoomExecution'];
    // A large profile draws from summaries and windows, never whole columns (views/tracks/).
    const lod = wantsLod(result.tables, DEVICE_LOD_TABLES);
    if (lod) await showDeviceLod(timeline, client, result.key, TIMELINE_COLUMNS);
    else detachLod(timeline);
    const [instr, dma, semaphores, throttle, pending] = await Promise.all([
      hasInstr && !lod ? source.columns('Instruction', TIMELINE_COLUMNS) : Promise.resolve(null),
      ...(lod ? [null, null, null, null] : [opt('DmaPacket', DMA_COLUMNS), opt('SemaphoreUpdate', SEMAPHORE_COLUMNS), opt('Throttle', THROTTLE_COLUMNS), opt('PendingDma', PENDING_DMA_COLUMNS)]),
    ]);
    if (selected?.profileId !== profile.id || selected.deviceIndex !== deviceIndex) return;
    const model = !lod && (instr !== null || dma !== null) ? buildTimeline(instr ?? emptyInstructions()) : null;
    if (!lod) timeline.setModel(model === null ? null : addDeviceRows(model, { dma: dma ?? null, semaphores: semaphores ?? null, throttle: throttle ?? null, pending: pending ?? null }));
    if (zoom !== undefined && result.tables.some((t) => t.name === 'ExecutionInfo' && Number(t.rows) > 0)) {
      const ex = pickExecution(executionRows(await source.columns('ExecutionInfo', ['execution_index', 'execution_start_ts', 'execution_end_ts'])), zoom.execId);
      if (ex !== null && ex.start !== null && ex.end !== null) {
        timeline.zoomTo(ex.start, ex.end);
        timeline.root.dataset['zoomExecution'] = String(ex.index);
      }
    }
    if (hasInstr) {
      progress('Summing device time per source line');
      sourceView.setHeat(await client.sourceHeat(result.key).catch((e: unknown) => {
        console.warn('source heat failed', e);
        return null;
      }));
    }
    progress(null);
    setState('ready');
  } catch (e) {
    progress(null);
    showError(`The timeline could not be drawn: ${message(e)}`, e);
  }
}

/** The Summary page's Explorer groups, from the one-row Summary and Metadata tables and the Throttle rows. */
async function fillSummaryGroups(source: TableSource & { columns(name: string, cols: string[]): Promise<Table> }, tables: TableInfo[]): Promise<void> {
  const box = document.querySelector<HTMLElement>('[data-testid=summary-groups]');
  if (box === null) return;
  const has = (n: string): boolean => tables.some((t) => t.name === n && Number(t.rows) > 0);
  try {
    const [summary, metadata, throttle] = await Promise.all([
      has('Summary') ? source.page('Summary', 0, 1) : Promise.resolve(null),
      has('Metadata') ? source.page('Metadata', 0, 1) : Promise.resolve(null),
      has('Throttle') ? source.columns('Throttle', THROTTLE_SUMMARY_COLUMNS) : Promise.resolve(null),
    ]);
    if (box.isConnected) renderSummaryGroups(box, summary, metadata, throttle);
  } catch (e) {
    box.replaceChildren(h('div', { class: 'error-inline' }, `The Summary table could not be read: ${message(e)}`));
  }
}

/** One line of the event's extra attributes for the tooltip (first few keys). */
function extraLine(o: Record<string, unknown>): HTMLElement | null {
  const extra = Object.entries(extraAttributes(o));
  if (extra.length === 0) return null;
  const text = extra.slice(0, 4).map(([k, v]) => `${k}=${cell(v)}`).join(' · ');
  return h('div', { class: 'muted' }, extra.length > 4 ? `${text} …` : text);
}

/** Extra attributes and, for nc_exec_running, the device profile it links to. */
function systemDetailsExtra(o: Record<string, unknown>): HTMLElement | null {
  const extra = extraAttributes(o);
  const parts: HTMLElement[] = [];
  if (Object.keys(extra).length > 0) {
    parts.push(h('h3', {}, 'Extra attributes'),
      h('dl', { class: 'kv details-grid', 'data-testid': 'system-extra' },
        Object.entries(extra).flatMap(([k, v]) => [h('dt', {}, k), h('dd', { 'data-field': `extra.${k}` }, cell(v))])));
  }
  const shown = systemShown;
  if (o['name'] === 'nc_exec_running' && shown !== null) {
    const dev = linkedDevice(o, shown.devices);
    const box = h('div', { class: 'device-link', 'data-testid': 'device-link' });
    if (dev === null) {
      box.dataset['link'] = 'none';
      box.append(h('div', { class: 'muted' }, 'No device profile (.ntff) of this capture matches this execution’s NeuronCore or model.'));
    } else {
      const w = linkWording(dev.nscope_link);
      box.dataset['link'] = w.kind;
      const target = findDevice(shown.profile, dev.device_profile_name);
      box.append(
        h('div', {}, 'Device profile ', h('span', { class: 'mono' }, dev.device_profile_name),
          dev.model_id !== null ? ` · model ${dev.model_id}` : '', dev.nc_id !== null ? ` · nc ${dev.nc_id}` : ''),
        h('div', { class: `link-note ${w.kind}`, 'data-testid': 'device-link-note' }, w.text),
      );
      if (target !== null && w.kind !== 'unlinked') {
        box.append(h('button', {
          class: 'btn small', 'data-testid': 'open-linked-device',
          onclick: () => void openDevice(shown.profile, target, { execId: numOrNull(extra['exec_id']) }),
        }, w.kind === 'same' ? 'Open this execution on the device timeline' : 'Open the device profile’s execution anyway (its own timeline)'));
      } else if (target === null) {
        box.append(h('div', { class: 'muted small' }, 'The .ntff is not among the picked files.'));
      }
    }
    parts.push(h('h3', {}, 'Device profile'), box);
  }
  return parts.length > 0 ? h('div', {}, parts) : null;
}

/** Source attribution of a clicked instruction and the link into the Source view. */
function instructionSource(o: Record<string, unknown>): HTMLElement | null {
  // The first render has only the timeline columns; the full row follows.
  if (!('nki_source_location' in o) && !('bir_debug_info_source_location' in o)) return null;
  const str = (k: string): string => (typeof o[k] === 'string' ? (o[k] as string) : '');
  const loc = str('nki_source_location') || str('bir_debug_info_source_location');
  const fields = ['bir_instruction_name', 'hlo_name', 'nki_source_location', 'bir_debug_info_source_location'];
  const box = h('div', { class: 'source-attr', 'data-testid': 'source-attribution' },
    h('dl', { class: 'kv' }, fields.flatMap((k) => [h('dt', {}, k), h('dd', { class: 'mono', 'data-attr': k }, str(k) || '–')])));
  if (loc === '') {
    box.append(h('div', { class: 'muted' }, 'No source location is recorded for this instruction.'));
    return h('div', {}, h('h3', {}, 'Source'), box);
  }
  const note = h('span', { class: 'muted small', 'data-testid': 'source-link-note' });
  box.append(h('div', { class: 'source-link-row' },
    h('button', { class: 'btn small', 'data-testid': 'source-link', 'data-location': loc, onclick: () => void openSourceLine(loc) }, 'Open source line'), ' ', note));
  client.sourceResolve([loc]).then((r) => {
    const f = r[0]?.files[0];
    note.dataset['resolved'] = f ?? '';
    note.textContent = f !== undefined
      ? `→ ${f}`
      : `${r[0]?.debug_path ?? loc} was not picked: add the folder that contains it, or a .tar.gz of your sources.`;
  }, () => {});
  return h('div', {}, h('h3', {}, 'Source'), box);
}

async function openSourceLine(location: string): Promise<void> {
  byId('source-panel').scrollIntoView({ block: 'start' });
  await sourceView.openLocation(location);
}

function numOrNull(v: unknown): number | null {
  const n = v === null || v === undefined || v === '' ? NaN : Number(v);
  return Number.isFinite(n) ? n : null;
}

/** Index of the device whose NTFF stem is `name` in `profile`, or null. */
function findDevice(profile: ProfileEntry, name: string): number | null {
  const stem = (p: string | null | undefined): string => (p ?? '').replace(/^.*\//, '').replace(/\.ntff$/, '');
  const i = profile.devices.findIndex((d) => d.ntff && (stem(d.ntff) === name || d.name === name));
  return i < 0 ? null : i;
}

async function openSystem(profile: ProfileEntry): Promise<void> {
  clearError();
  // The export comparison belongs to a device profile.
  byId('conform').replaceChildren();
  selected = null;
  systemShown = { profile, devices: [] };
  leaveMemory();
  renderInventory();
  setState('processing');
  progress('Decoding the system trace');
  let result: SystemResult;
  try {
    result = await client.processSystem(profile.id, (stage, done, total) => progress(`Decoding ${stage}`, done, total));
  } catch (e) {
    progress(null);
    clearWorkspace();
    renderInventory();
    showError(`Decoding the system trace of ${profile.root || profile.id} failed: ${message(e)}`, e);
    return;
  }
  if (systemShown?.profile.id !== profile.id || selected !== null) return;
  const where = [profile.instance_id, profile.pid !== null && profile.pid !== undefined ? `pid ${profile.pid}` : null].filter(Boolean).join(' · ');
  renderSystemSummary(byId('summary'), `${profile.profile_type} profile · system trace${where ? ` · ${where}` : ''}`, result);
  document.body.classList.remove('has-result');
  timeline.setModel(null);
  document.body.classList.add('has-system');
  const source = tableSource(result, `${profile.root || 'system'}-system`);
  browser.setSource(source, preferFirst(result.tables, 'SystemProfileEvents'));
  try {
    progress('Drawing the system timeline');
    const has = (n: string): boolean => result.tables.some((t) => t.name === n && Number(t.rows) > 0);
    const lod = wantsLod(result.tables, SYSTEM_LOD_TABLES);
    if (!lod) detachLod(systemView);
    const [events, cpu, mem, devs] = await Promise.all([
      has('SystemProfileEvents') && !lod ? source.columns('SystemProfileEvents', SYSTEM_EVENT_COLUMNS) : Promise.resolve(null),
      has('CpuUsage') ? source.columns('CpuUsage', ['timestamp', 'util_percent', 'cpu_id']) : Promise.resolve(null),
      has('HostMemUsage') ? source.columns('HostMemUsage', ['timestamp', 'used_bytes', 'used_percent']) : Promise.resolve(null),
      has('DeviceProfileList') ? source.columns('DeviceProfileList', ['device_profile_name', 'nc_id', 'model_id', 'nscope_link']) : Promise.resolve(null),
    ]);
    if (systemShown?.profile.id !== profile.id) return;
    systemShown.devices = devs === null ? [] : deviceLinkRows(devs);
    systemView.rowLoader = (row) => source.page('SystemProfileEvents', row, 1);
    const threadNames = new Map(Object.values(result.report.framework ?? {}).flatMap((f) => Object.entries(f.thread_names ?? {})));
    if (lod) await showSystemLod(systemView, client, result.key, cpu, mem, threadNames);
    else systemView.setModel(events === null && cpu === null && mem === null ? null : buildSystemTimeline(events ?? emptyEvents(), cpu, mem, threadNames));
    progress(null);
    setState('ready');
  } catch (e) {
    progress(null);
    showError(`The system timeline could not be drawn: ${message(e)}`, e);
  }
}

function emptyInstructions(): Table {
  return tableFromArrays({ start_ts: new BigInt64Array(0), end_ts: new BigInt64Array(0) });
}

/** Hides the Memory view (another profile is opened). */
function leaveMemory(): void {
  if (memoryShown === null) return;
  memoryShown = null;
  document.body.classList.remove('has-memory');
  memoryView.setModel(null, null);
}

/** `n noun` with the plural `s` when n ≠ 1. */
function count(n: number | bigint, noun: string): string {
  const v = Number(n);
  return `${int(v)} ${noun}${v === 1 ? '' : 's'}`;
}

/** MemoryAllocatorEvent columns the Memory view reads. */
const MEMORY_EVENT_COLUMNS = ['timestamp', 'device', 'action', 'address', 'size', 'stack_id', 'device_free', 'allocated_delta_bytes', 'reserved_delta_bytes'];

async function openMemory(path: string): Promise<void> {
  clearError();
  byId('conform').replaceChildren();
  selected = null;
  systemShown = null;
  memoryShown = path;
  renderInventory();
  setState('processing');
  progress(`Reading ${path.replace(/^.*\//, '')}`);
  let result: MemoryResult;
  try {
    result = await client.processMemory(path);
  } catch (e) {
    progress(null);
    clearWorkspace();
    renderInventory();
    showError(`Reading the memory snapshot ${path} failed: ${message(e)}`, e);
    return;
  }
  if (memoryShown !== path) return;
  document.body.classList.remove('has-result', 'has-system');
  timeline.setModel(null);
  systemView.setModel(null);
  const rep = result.report;
  byId('summary').replaceChildren(h('div', {},
    h('h2', {}, `PyTorch memory snapshot · ${path}`),
    h('div', { class: 'muted small', 'data-testid': 'memory-report' },
      `pickle protocol ${rep.protocol ?? '?'} · ${int(Number(rep.events))} trace entries · ${count(rep.segments, 'segment')} · ${count(rep.blocks, 'block')} · ${count(rep.stacks, 'distinct stack')} (${count(rep.frames, 'frame')}) · ${int(Number(rep.devices.length))} device${rep.devices.length === 1 ? '' : 's'}`
      + (result.wasm_memory_bytes ? ` · wasm memory ${bytes(result.wasm_memory_bytes)}` : '')),
    foldedProblems(rep.problems)));
  document.body.classList.add('has-memory');
  const source = tableSource(result, path);
  browser.setSource(source, preferFirst(result.tables, 'MemoryAllocatorEvent'));
  const has = (n: string): boolean => result.tables.some((t) => t.name === n && Number(t.rows) > 0);
  try {
    progress('Drawing the memory timeline');
    const [events, blocks, segs, frameIds] = await Promise.all([
      has('MemoryAllocatorEvent') ? source.columns('MemoryAllocatorEvent', MEMORY_EVENT_COLUMNS) : Promise.resolve(null),
      has('MemoryBlock') ? source.columns('MemoryBlock', ['device', 'address', 'size', 'state', 'stack_id']) : Promise.resolve(null),
      has('MemorySegment') ? source.columns('MemorySegment', ['device', 'address', 'total_size', 'stack_id']) : Promise.resolve(null),
      has('MemoryStackFrame') ? source.columns('MemoryStackFrame', ['stack_id']) : Promise.resolve(null),
    ]);
    if (memoryShown !== path) return;
    // Row where each stack's frames begin (the table lists them stack by stack).
    const firstRow = new Map<number, [number, number]>();
    const sid = frameIds?.getChild('stack_id');
    for (let i = 0; i < (frameIds?.numRows ?? 0); i++) {
      const s = Number(sid?.get(i) ?? -1);
      const e = firstRow.get(s);
      if (e === undefined) firstRow.set(s, [i, 1]);
      else e[1]++;
    }
    const loader = async (stack: number): Promise<string[]> => {
      const at = firstRow.get(stack);
      if (at === undefined) return [];
      const t = await source.page('MemoryStackFrame', at[0], at[1]);
      const out: string[] = [];
      for (let i = 0; i < t.numRows; i++) {
        const r = t.get(i)?.toJSON() as Record<string, unknown> | undefined;
        if (r === undefined) continue;
        const fx = r['fx_node_name'] ? `  [fx ${String(r['fx_node_op'] ?? '')} ${String(r['fx_node_name'])}]` : '';
        out.push(`${String(r['filename'] ?? '?')}:${String(r['line'] ?? '?')} ${String(r['name'] ?? '?')}${fx}`);
      }
      return out;
    };
    const show = (device: number | null): void => {
      memoryView.setModel(buildMemoryModel(events, blocks, segs, rep.devices, device), loader, path);
    };
    memoryView.onDevice = (d) => show(d);
    show(null);
    progress(null);
    setState('ready');
  } catch (e) {
    progress(null);
    showError(`The memory timeline could not be drawn: ${message(e)}`, e);
  }
}

function emptyEvents(): Table {
  return tableFromArrays({ start_ts: new BigInt64Array(0), end_ts: new BigInt64Array(0) });
}

/** `tables` with `name` first (the table browser opens the first one). */
function preferFirst(tables: TableInfo[], name: string): TableInfo[] {
  return [...tables.filter((t) => t.name === name), ...tables.filter((t) => t.name !== name)];
}

/** Headline numbers of a decoded system trace. */
function renderSystemSummary(root: HTMLElement, title: string, r: SystemResult): void {
  const rep = r.report;
  const rows = (n: string): number => Number(r.tables.find((t) => t.name === n)?.rows ?? 0);
  const card = (label: string, value: string, testid: string, raw: string | number): HTMLElement =>
    h('div', { class: 'card' }, h('div', { class: 'card-label' }, label),
      h('div', { class: 'card-value', 'data-testid': testid, 'data-value': raw }, value));
  const first = rep.first_ts_ns ?? null;
  const last = rep.last_ts_ns ?? null;
  const span = first !== null && last !== null ? Number(last) - Number(first) : null;
  const counts = Object.entries(rep.event_counts ?? {}).sort((a, b) => Number(b[1]) - Number(a[1]));
  root.replaceChildren(...nodes(
    h('h2', {}, title),
    h('div', { class: 'cards' },
      card('Events', int(rows('SystemProfileEvents')), 'system-event-count', rows('SystemProfileEvents')),
      card('Time span', span === null ? '–' : ns(span), 'system-span', span ?? ''),
      card('CPU samples', int(rows('CpuUsage')), 'system-cpu-rows', rows('CpuUsage')),
      card('Host memory samples', int(rows('HostMemUsage')), 'system-mem-rows', rows('HostMemUsage')),
      card('Device profiles', int(rows('DeviceProfileList')), 'system-device-count', rows('DeviceProfileList'))),
    counts.length > 0
      ? h('details', { class: 'problem-fold' }, h('summary', {}, `${counts.length} event kinds`),
          h('table', { class: 'grid' }, h('tbody', {}, counts.map(([k, v]) => h('tr', {}, h('td', { class: 'mono' }, k), h('td', { class: 'num' }, int(Number(v))))))))
      : null,
    (rep.files ?? []).length > 0
      ? h('div', { class: 'muted small' }, 'Files: ', (rep.files ?? []).map((f) => `${f.file} (${int(Number(f.records ?? 0))} records)`).join(' · '))
      : null,
    (rep.devices ?? []).length > 0
      ? h('ul', { class: 'small' }, (rep.devices ?? []).map((d) => h('li', {}, h('span', { class: 'mono' }, d.ntff), ` — ${d.link}`)))
      : null,
    foldedProblems(r.problems),
  ));
}

/** Instruction columns the timeline draws from or shows on hover (the rest load per click). */
const TIMELINE_COLUMNS = ['start_ts', 'end_ts', 'engine', 'pcore_idx', 'opcode', 'pc', 'evt_wait_time_ns', 'bir_instruction_name'];

function tableSource(result: { key: string; tables: TableInfo[] }, deviceName: string): TableSource & { columns(name: string, cols: string[]): Promise<Table> } {
  let descs: Promise<Map<string, Map<string, string>>> | null = null;
  const page = async (name: string, offset: number, count: number): Promise<Table> => {
    const t = tableFromIPC(await client.tableRows(result.key, name, offset, count));
    // A core without row ranges sends the whole table: cut the page here.
    return t.numRows > count ? t.slice(offset, offset + count) : t;
  };
  const table = (name: string): Promise<Table> => client.tableIpc(result.key, name).then((b) => tableFromIPC(b));
  const safe = deviceName.replace(/^.*\//, '').replace(/\.[^.]*$/, '').replace(/[^A-Za-z0-9._-]+/g, '_') || 'profile';
  return {
    page,
    columns: async (name, cols) => tableFromIPC(await client.tableColumns(result.key, name, cols)),
    async downloadParquet(name) {
      try {
        download(await client.tableParquet(result.key, name), `${name}.parquet`);
      } catch (e) {
        showError(`Parquet export of ${name} failed: ${message(e)}`, e);
      }
    },
    async downloadAll() {
      try {
        download(await client.bundle(result.key), `${safe}-tables.zip`, 'application/zip');
      } catch (e) {
        showError(`Zip export failed: ${message(e)}`, e);
      }
    },
    descriptions(tableName) {
      if (descs === null) {
        descs = result.tables.some((t) => t.name === 'SchemaFields')
          ? table('SchemaFields').then((sf) => {
              const out = new Map<string, Map<string, string>>();
              const tn = sf.getChild('table_name');
              const fn = sf.getChild('field_name');
              const fd = sf.getChild('field_description');
              for (let i = 0; i < sf.numRows; i++) {
                const t = String(tn?.get(i) ?? '');
                let m = out.get(t);
                if (m === undefined) out.set(t, (m = new Map()));
                m.set(String(fn?.get(i) ?? ''), String(fd?.get(i) ?? ''));
              }
              return out;
            }).catch(() => new Map())
          : Promise.resolve(new Map());
      }
      return descs.then((d) => d.get(tableName) ?? new Map<string, string>());
    },
  };
}

async function openFolder(): Promise<void> {
  const picker = directoryPicker();
  if (picker === null) {
    byId<HTMLInputElement>('folder-input').click();
    return;
  }
  try {
    const files = await pickWithDirectoryPicker(picker);
    if (files !== null) await loadFiles(files, 'the folder');
  } catch (e) {
    // Some browsers expose the API but refuse it (e.g. in an iframe): fall back to the input.
    console.warn('showDirectoryPicker failed, using the file input', e);
    byId<HTMLInputElement>('folder-input').click();
  }
}

function wire(): void {
  for (const id of ['open-folder', 'open-folder-2']) byId(id).addEventListener('click', () => void openFolder());
  for (const id of ['open-demo', 'open-demo-2']) byId(id).addEventListener('click', () => void loadDemo());
  const input = byId<HTMLInputElement>('folder-input');
  input.addEventListener('change', () => {
    // An empty folder is loaded too, so the page says it is empty instead of doing nothing.
    if (input.files !== null) void loadFiles(filesFromInput(input.files), 'the folder');
    input.value = '';
  });
  const files = byId<HTMLInputElement>('files-input');
  byId('open-files').addEventListener('click', () => files.click());
  files.addEventListener('change', () => {
    if (files.files !== null && files.files.length > 0) void loadFiles(filesFromInput(files.files), 'the files');
    files.value = '';
  });

  let depth = 0;
  window.addEventListener('dragenter', (e) => {
    e.preventDefault();
    depth++;
    document.body.classList.add('dragging');
  });
  window.addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) document.body.classList.remove('dragging');
  });
  window.addEventListener('dragover', (e) => {
    e.preventDefault();
    if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy';
  });
  window.addEventListener('drop', (e) => {
    e.preventDefault();
    depth = 0;
    document.body.classList.remove('dragging');
    if (e.dataTransfer === null) return;
    void loadFiles(filesFromDrop(e.dataTransfer), 'the dropped files');
  });

  byId('summary-panel').append(h('div', { id: 'conform', class: 'conform', 'data-testid': 'conform' }));
  byId('timeline-slot').append(timeline.root);
  byId('system-slot').append(systemView.root);
  byId('memory-slot').append(memoryView.root);
  byId('tables-slot').append(browser.root);
  byId('source-slot').append(sourceView.root);
  client.onFatal = (m) => showError(`The processing worker stopped: ${m}`);
  // The call that crashed shows its own error (naming the file and step); the page only counts restarts.
  client.onRestart = (crash) => {
    document.body.dataset['workerRestarts'] = String(crash.restarts);
    console.warn(`neuronscope: worker restarted after a crash (${crash.message})`);
  };
}

/**
 * The crash-containment test hook (`?fault=panic|alloc&fault-on=<NTFF path part>&fault-step=…&fault-table=…`, see
 * protocol.ts FaultSpec): only a URL typed on purpose sets it, never a picked file.
 */
function faultFromUrl(): FaultSpec | null {
  const q = new URLSearchParams(location.search);
  const kind = q.get('fault');
  if (kind === null) return null;
  const step = q.get('fault-step');
  return {
    kind,
    on: q.get('fault-on') ?? '',
    step: step === 'table' || step === 'columns' ? step : 'process',
    table: q.get('fault-table') ?? '',
  };
}

function boot(): void {
  setState('boot');
  wire();
  const pkgUrl = new URL('pkg/neuronscope.js', document.baseURI).href;
  coreReady = client.init(pkgUrl, faultFromUrl()).then(
    ({ version }) => {
      byId('version').textContent = `core ${version}`;
      if (document.body.dataset['state'] === 'boot') setState('idle');
    },
    (e: unknown) => {
      showError(`The wasm core could not be loaded from ${pkgUrl} (${message(e)}). Build it with "npm run build".`);
      throw e;
    },
  );
  if (new URLSearchParams(location.search).has('demo')) void loadDemo();
}

boot();
