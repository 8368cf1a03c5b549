// Page entry: folder picking, the worker proxy, and the workspace: a pinned profile list, the views
// as tabs (Summary · Timeline · System · Memory · Source · Tables · Compare with export; a tab shows
// only when the open profile has that view) and a resizable bottom panel (Details, Selection).
// Every profile kind opens through one sequence (`openProfile`). State is shown on
// <body data-state>: boot → idle → loading → processing → ready (or error), which the browser tests
// wait on; the open profile, the tab and the selected range are kept in the URL hash (Back/Forward).

import { tableFromArrays, tableFromIPC, type Table } from 'apache-arrow';
import type { Inventory, MemoryResult, Problem, ProcessResult, ProfileEntry, RangeSummary, SystemResult, TableInfo } from './api.ts';
import { Cancelled, CoreClient, CoreCrash } from './client.ts';
import { byId, download, h, nodes } from './dom.ts';
import { bytes, cell, count, int, ns } from './format.ts';
import { mountJobs } from './views/jobs.ts';
import { directoryPicker, filesFromDrop, filesFromInput, pickWithDirectoryPicker } from './picker.ts';
import type { FaultSpec, PickedFile } from './protocol.ts';
import { foldedProblems, hasSystemTrace, isNeffOnly, isOpenable, isPaired, memorySnapshots, renderProfiles } from './views/profiles.ts';
import { MemoryView, type StackFrame } from './views/memory.ts';
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
import { coreLabel, engineLabel, ENGINES, NEFF_ROWS_SHOWN, renderNeffSummary, renderSummary, renderSummaryGroups, THROTTLE_SUMMARY_COLUMNS } from './views/summary.ts';
import { exportsFor, renderConform } from './views/conform.ts';
import { TableBrowser, type TableSource } from './views/tables.ts';
import { SEARCH_LIMIT, SearchBar } from './views/search.ts';
import { buildTimeline, INSTRUCTION_COLUMNS } from './views/timeline-model.ts';
import { addDeviceRows, DMA_COLUMNS, PENDING_DMA_COLUMNS, SEMAPHORE_COLUMNS, THROTTLE_COLUMNS } from './views/device-rows.ts';
import { TimelineView } from './views/timeline.ts';
import type { TimeRange } from './views/timeline-input.ts';
import { DEVICE_LOD_TABLES, detachLod, showDeviceLod, showSystemLod, SYSTEM_LOD_ROWS, SYSTEM_LOD_TABLES, wantsLod } from './views/tracks/open.ts';

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
/** Search over the device profile's events (Timeline tab). */
const searchBar = new SearchBar();
/** PyTorch memory snapshot on screen (its path). */
const memoryView = new MemoryView();
let memoryShown: string | null = null;

let inventory: Inventory | null = null;
let selected: { profileId: string; deviceIndex: number } | null = null;
/** Problems of each processed device (`profileId#deviceIndex`): the list marks a NEFF that failed to decode. */
const deviceProblems = new Map<string, readonly Problem[]>();
/** Problems of each decoded system trace, by profile id (the sidebar lists them under its button). */
const systemProblems = new Map<string, readonly Problem[]>();
/** Problems of each decoded memory snapshot, by path (an error marks its sidebar entry). */
const memoryProblems = new Map<string, readonly Problem[]>();
/** The picked files (for reading a JSON export on the page); empty for the demo. */
let pickedFiles: PickedFile[] = [];
let coreReady: Promise<void> = Promise.resolve();

// ── Workspace: views as tabs, a bottom panel with Details and Selection ──────────────────────────

type ViewName = 'summary' | 'timeline' | 'system' | 'memory' | 'source' | 'tables' | 'compare';
const VIEWS: readonly (readonly [ViewName, string])[] = [
  ['summary', 'Summary'], ['timeline', 'Timeline'], ['system', 'System'], ['memory', 'Memory'],
  ['source', 'Source'], ['tables', 'Tables'], ['compare', 'Compare with export'],
];
let available: ViewName[] = ['summary'];
let activeView: ViewName = 'summary';
const tabButtons = new Map<ViewName, HTMLButtonElement>();

/** Offers only `views` (a view that is not the open profile's is hidden) and shows `prefer` unless the tab on screen is still offered. */
function setViews(views: ViewName[], prefer?: ViewName, keep = true): void {
  available = views;
  for (const [name, b] of tabButtons) b.hidden = !views.includes(name);
  const next = keep && views.includes(activeView) && prefer !== undefined && activeView !== 'summary' ? activeView : prefer ?? views[0] ?? 'summary';
  showView(views.includes(next) ? next : 'summary', false);
}

/** Shows view `name` (its tab selected); `record` writes it to the URL (a Back step). */
function showView(name: ViewName, record = true): void {
  activeView = name;
  document.body.dataset['view'] = name;
  for (const [n, b] of tabButtons) {
    b.setAttribute('aria-selected', String(n === name));
    b.tabIndex = n === name ? 0 : -1;
  }
  for (const el of document.querySelectorAll<HTMLElement>('#views > .view')) el.classList.toggle('active', el.dataset['view'] === name);
  byId('details-slot').replaceChildren(name === 'system' ? systemDetails : shown?.kind === 'memory' ? memoryDetailsNote() : deviceDetails);
  if (record) writeHash(false);
}

function buildTabs(): void {
  const nav = byId('view-tabs');
  for (const [name, label] of VIEWS) {
    const b = h('button', {
      class: 'tab', role: 'tab', 'data-testid': `tab-${name}`,
      onclick: (e: Event) => {
        showView(name);
        // A pointer click on a timeline's tab hands the keys (W/S/A/D/F) to its canvas; keyboard
        // users (detail 0) stay on the tab list.
        if (e instanceof MouseEvent && e.detail > 0 && (name === 'timeline' || name === 'system')) {
          document.querySelector<HTMLCanvasElement>(`[data-testid=${name === 'system' ? 'system' : 'timeline'}-canvas]`)?.focus({ preventScroll: true });
        }
      },
    }, label);
    b.hidden = name !== 'summary';
    tabButtons.set(name, b);
    nav.append(b);
  }
  // Arrow keys move between the offered tabs (WAI-ARIA tabs pattern).
  nav.addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
    const i = available.indexOf(activeView);
    const next = available[(i + (e.key === 'ArrowRight' ? 1 : available.length - 1)) % available.length];
    if (next === undefined) return;
    showView(next);
    tabButtons.get(next)?.focus();
    e.preventDefault();
  });
  // Sections keep the ids they have (#summary-panel, #source-panel); the others get view-<name>.
  for (const el of document.querySelectorAll<HTMLElement>('#views > .view')) {
    if (el.id === '') el.id = `view-${el.dataset['view'] ?? ''}`;
    tabButtons.get(el.dataset['view'] as ViewName)?.setAttribute('aria-controls', el.id);
  }
}

type PanelPage = 'details' | 'selection';
const panelButtons = new Map<PanelPage, HTMLButtonElement>();

function showPanel(page: PanelPage): void {
  for (const [p, b] of panelButtons) {
    b.setAttribute('aria-selected', String(p === page));
    b.tabIndex = p === page ? 0 : -1;
  }
  for (const el of document.querySelectorAll<HTMLElement>('.panel-page')) el.classList.toggle('active', el.dataset['page'] === page);
  document.body.dataset['panel'] = page;
}

/** Details and Selection tabs; the splitter above resizes the panel (drag, or arrow keys). */
function buildPanel(): void {
  const nav = byId('panel-tabs');
  for (const [page, label] of [['details', 'Details'], ['selection', 'Selection']] as const) {
    const b = h('button', { class: 'tab', role: 'tab', 'data-testid': `panel-tab-${page}`, onclick: () => showPanel(page) }, label);
    panelButtons.set(page, b);
    nav.append(b);
  }
  showPanel('details');
  const bar = byId('panel-resize');
  const panel = byId('bottom-panel');
  const setH = (px: number): void => {
    const max = Math.max(80, window.innerHeight - 200);
    panel.style.setProperty('--panel-h', `${Math.round(Math.min(max, Math.max(60, px)))}px`);
  };
  bar.addEventListener('pointerdown', (e) => {
    const y0 = e.clientY;
    const h0 = panel.getBoundingClientRect().height;
    bar.setPointerCapture(e.pointerId);
    const move = (ev: PointerEvent): void => setH(h0 + (y0 - ev.clientY));
    const up = (): void => {
      bar.removeEventListener('pointermove', move);
      bar.removeEventListener('pointerup', up);
    };
    bar.addEventListener('pointermove', move);
    bar.addEventListener('pointerup', up);
  });
  bar.addEventListener('keydown', (e) => {
    const hgt = panel.getBoundingClientRect().height;
    if (e.key === 'ArrowUp') setH(hgt + 24);
    else if (e.key === 'ArrowDown') setH(hgt - 24);
    else return;
    e.preventDefault();
  });
  // A clicked slice's fields appear in the Details tab.
  for (const d of [deviceDetails, systemDetails]) {
    new MutationObserver(() => {
      if (d.querySelector('[data-field]') !== null) showPanel('details');
    }).observe(d, { childList: true });
  }
}

const deviceDetails = timeline.root.querySelector<HTMLElement>('.details') ?? h('div');
const systemDetails = systemView.root.querySelector<HTMLElement>('.details') ?? h('div');
const selectionBox = h('div', { class: 'selection-box', 'data-testid': 'selection-summary' });
const SELECTION_HINT = 'Drag on the timeline’s time axis (or Shift + drag over the tracks) to select a range: busy time per engine, the longest opcodes and DMA bytes in it appear here.';

let selectionSeq = 0;

/** Asks the core for what the device did in `range` and shows it in the Selection tab. */
async function showSelection(range: TimeRange | null): Promise<void> {
  writeHash(false);
  const seq = ++selectionSeq;
  const cur = shown;
  document.body.classList.toggle('has-range', range !== null && cur !== null && cur.kind === 'device');
  if (range === null || cur === null || cur.kind !== 'device') {
    selectionBox.replaceChildren(h('div', { class: 'muted' }, SELECTION_HINT));
    delete selectionBox.dataset['start'];
    return;
  }
  showPanel('selection');
  selectionBox.replaceChildren(h('div', { class: 'muted' }, `Summarising ${ns(range.end - range.start)}…`));
  try {
    const r = await client.rangeSummary(cur.key, range.start, range.end, 12);
    if (seq !== selectionSeq) return;
    renderSelection(selectionBox, r);
  } catch (e) {
    if (seq !== selectionSeq) return;
    selectionBox.replaceChildren(h('div', { class: 'error-inline' }, `The selection could not be summarised: ${message(e)}`));
  }
}

/** The Selection tab: busy per engine and core, top opcodes, DMA per queue (crate::range). */
function renderSelection(root: HTMLElement, r: RangeSummary): void {
  const span = r.end_ns - r.start_ns;
  root.dataset['start'] = String(r.start_ns);
  root.dataset['end'] = String(r.end_ns);
  root.dataset['instructions'] = String(r.instruction_count);
  root.dataset['dmaBytes'] = String(r.dma_bytes);
  root.dataset['dmaPackets'] = String(r.dma_packets);
  const perCore = r.engines.filter((e) => e.pcore_idx !== null);
  const allCores = r.engines.filter((e) => e.pcore_idx === null);
  const slowest = [...perCore].sort((a, b) => b.busy_ns - a.busy_ns)[0];
  const bar = (f: number): HTMLElement => h('span', { class: 'busy-bar' }, h('span', { style: `width:${(Math.min(1, f) * 100).toFixed(1)}%` }));
  const pct = (f: number): string => `${(f * 100).toFixed(2)} %`;
  root.replaceChildren(
    h('div', { class: 'selection-head' },
      h('strong', {}, `${ns(r.start_ns)} – ${ns(r.end_ns)}`), ` · ${ns(span)} · ${count(r.instruction_count, 'instruction')} starting in it · ${count(r.dma_packets, 'DMA packet')} (${bytes(r.dma_bytes)})`,
      slowest !== undefined ? h('span', { class: 'slowest' }, ` · busiest: ${coreLabel(slowest.pcore_idx ?? 0)} ${engineLabel(slowest.engine)} ${pct(slowest.busy_fraction)}`) : null),
    h('div', { class: 'selection-summary' },
      h('section', {},
        h('h3', { title: 'Busy = union of the engine’s instructions clipped to the range, semaphore waits excluded: the Summary’s active-time definition. Over the whole execution it equals the Summary’s <engine>_active_time_percent.' }, 'Busy time (semaphore waits excluded)'),
        h('table', { class: 'grid', 'data-testid': 'selection-engines' },
          h('thead', {}, h('tr', {}, h('th', {}, 'Engine'), h('th', { class: 'num' }, 'busy'), h('th', { class: 'num' }, '% of range'), h('th', { class: 'num' }, 'instructions'))),
          h('tbody', {}, [...perCore, ...(allCores.length > 0 && new Set(perCore.map((e) => e.pcore_idx)).size > 1 ? allCores : [])].map((e) =>
            h('tr', { 'data-engine': e.engine, 'data-pcore': e.pcore_idx ?? 'all', 'data-busy-ns': e.busy_ns, 'data-fraction': e.busy_fraction },
              h('td', {}, `${e.pcore_idx === null ? 'all cores' : coreLabel(e.pcore_idx)} ${engineLabel(e.engine)}`),
              h('td', { class: 'num' }, ns(e.busy_ns)),
              h('td', { class: 'num' }, bar(e.busy_fraction), pct(e.busy_fraction)),
              h('td', { class: 'num' }, int(e.instructions))))))),
      h('section', {},
        h('h3', {}, `Longest opcodes${r.opcode_count > r.opcodes.length ? ` (top ${r.opcodes.length} of ${r.opcode_count})` : ''}`),
        h('table', { class: 'grid', 'data-testid': 'selection-opcodes' },
          h('thead', {}, h('tr', {}, h('th', {}, 'Opcode'), h('th', {}, 'engine'), h('th', { class: 'num' }, 'time'), h('th', { class: 'num' }, 'count'))),
          h('tbody', {}, r.opcodes.map((o) => h('tr', { 'data-opcode': o.opcode, 'data-engine': o.engine, 'data-time-ns': o.time_ns, 'data-count': o.count },
            h('td', { class: 'mono' }, o.opcode || '(none)'), h('td', {}, engineLabel(o.engine)),
            h('td', { class: 'num' }, ns(o.time_ns)), h('td', { class: 'num' }, int(o.count))))))),
      r.dma_queues.length > 0
        ? h('section', {},
            h('h3', {}, 'DMA bytes per queue'),
            h('table', { class: 'grid', 'data-testid': 'selection-dma' },
              h('thead', {}, h('tr', {}, h('th', {}, 'Queue'), h('th', {}, 'type'), h('th', { class: 'num' }, 'bytes'), h('th', { class: 'num' }, 'packets'))),
              h('tbody', {}, r.dma_queues.map((q) => h('tr', { 'data-queue': q.queue_name, 'data-pcore': q.pcore_idx, 'data-bytes': q.bytes, 'data-packets': q.packets },
                h('td', { class: 'mono' }, `${coreLabel(q.pcore_idx)} ${q.queue_name}`), h('td', {}, q.queue_type),
                h('td', { class: 'num' }, bytes(q.bytes)), h('td', { class: 'num' }, int(q.packets)))))))
        : null),
  );
}

// ── State in the URL: #device=<profile>:<i> | #system=<profile> | #memory=<path>, &view=, &range=a,b ─

let applyingHash = false;

/** Writes the open profile, the tab and the range to the URL; `push` adds a Back step (a new profile). */
function writeHash(push: boolean): void {
  if (applyingHash || shown === null) return;
  const parts = [shown.hash, `view=${activeView}`];
  const r = shown.kind === 'device' ? timeline.input.range() : null;
  if (r !== null) parts.push(`range=${Math.floor(r.start)},${Math.ceil(r.end)}`); // as the core rounds it (wasm.rs range_summary)
  const hash = `#${parts.join('&')}`;
  if (hash === location.hash) return;
  if (push) history.pushState(null, '', hash);
  else history.replaceState(null, '', hash);
}

/** Opens what the URL hash names in the current inventory; false when it names nothing here. */
function applyHash(fromHistory: boolean): boolean {
  if (inventory === null) return false;
  const q = new URLSearchParams(location.hash.replace(/^#/, ''));
  const view = q.get('view') as ViewName | null;
  const rangeText = q.get('range')?.split(',').map(Number);
  const range = rangeText !== undefined && rangeText.length === 2 && rangeText.every(Number.isFinite) ? { start: rangeText[0] ?? 0, end: rangeText[1] ?? 0 } : undefined;
  const inv = inventory;
  const dev = q.get('device');
  const sys = q.get('system');
  const mem = q.get('memory');
  const then = (): void => {
    applyingHash = true;
    if (view !== null && available.includes(view)) showView(view, false);
    applyingHash = false;
  };
  if (dev !== null) {
    const cut = dev.lastIndexOf(':');
    const p = inv.profiles.find((x) => x.id === dev.slice(0, cut));
    const i = Number(dev.slice(cut + 1));
    const d = p?.devices[i];
    if (p === undefined || d === undefined || !isOpenable(d)) return false;
    if (fromHistory && shown?.hash === `device=${encodeURIComponent(p.id)}:${i}`) {
      then();
      applyingHash = true;
      timeline.input.select(range ?? null);
      applyingHash = false;
      return true;
    }
    void openDevice(p, i, undefined, range).then(then);
    return true;
  }
  if (sys !== null) {
    const p = inv.profiles.find((x) => x.id === sys);
    if (p === undefined) return false;
    if (fromHistory && shown?.hash === `system=${encodeURIComponent(p.id)}`) then();
    else void openSystem(p).then(then);
    return true;
  }
  if (mem !== null && memorySnapshots(inv).some((f) => f.path === mem)) {
    if (fromHistory && shown?.hash === `memory=${encodeURIComponent(mem)}`) then();
    else void openMemory(mem).then(then);
    return true;
  }
  return false;
}

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
  byId('progress-fill').style.transform = `scaleX(${total > 0 ? frac.toFixed(3) : 1})`;
  byId('progress-fill').classList.toggle('indeterminate', total <= 0);
  // Stages report bytes (NTFF) or steps (NEFF 0/1): bytes only when they look like bytes.
  byId('progress-label').textContent =
    total > 4096 ? `${stage} · ${bytes(done)} of ${bytes(total)}` : total > 1 ? `${stage} · ${done}/${total}` : stage;
  box.dataset['stage'] = stage;
}

function renderInventory(): void {
  if (inventory === null) return;
  // The list is rebuilt: the entry that had the focus (Enter on it) keeps it.
  const side = byId('profiles');
  const had = document.activeElement instanceof HTMLElement && side.contains(document.activeElement) ? document.activeElement : null;
  const focusKey = had === null ? null : focusKeyOf(had);
  renderProfiles(side, inventory, {
    selected,
    onOpen: (p, i) => void openDevice(p, i),
    onOpenSystem: (p) => void openSystem(p),
    systemShown: systemShown?.profile.id ?? null,
    onOpenMemory: (path) => void openMemory(path),
    memoryShown,
    deviceProblems,
    systemProblems,
    memoryProblems,
  });
  if (focusKey !== null) {
    for (const el of side.querySelectorAll<HTMLElement>('[tabindex], button')) {
      if (focusKeyOf(el) === focusKey) {
        el.focus({ preventScroll: true });
        break;
      }
    }
  }
}

/** Identity of a sidebar control across re-renders: its kind, profile, device index or path. */
function focusKeyOf(el: HTMLElement): string {
  return [el.dataset['testid'] ?? el.tagName, el.closest<HTMLElement>('[data-profile-id]')?.dataset['profileId'] ?? '', el.dataset['deviceIndex'] ?? '', el.dataset['path'] ?? ''].join('\u0000');
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
    progress(`Scanning ${count(list.length, 'file')}`);
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
  // Keyed by profile id (the root folder): a new pick with the same folder names starts clean.
  deviceProblems.clear();
  systemProblems.clear();
  memoryProblems.clear();
  sourceView.reset();
  document.body.classList.add('has-capture');
  renderInventory();
  clearWorkspace();
  // Then, after what opens first, every system trace in the background: its problems show in the
  // list up front, as the opened device's do (applyHash and the choice below start that open).
  queueMicrotask(() => void checkSystemTraces(inv));
  // The profile the URL names (Back/Forward, a reload of the same folder), else the first device
  // that can be decoded (paired), else the first device at all.
  if (applyHash(false)) return;
  const candidates = inv.profiles.flatMap((p) =>
    p.devices.flatMap((d, i) => (d.ntff ? [{ p, i, ok: isPaired(d) }] : [])),
  );
  const first = candidates.find((c) => c.ok) ?? candidates[0];
  const snap = memorySnapshots(inv)[0];
  const sys = inv.profiles.find((p) => hasSystemTrace(p));
  // A folder of NEFFs alone opens the first one's summary (tensors, queues, instructions).
  const neff = inv.profiles.flatMap((p) => p.devices.flatMap((d, i) => (isNeffOnly(d) ? [{ p, i }] : [])))[0];
  if (first !== undefined) void openDevice(first.p, first.i);
  else if (snap !== undefined) void openMemory(snap.path);
  else if (sys !== undefined) void openSystem(sys);
  else if (neff !== undefined) void openDevice(neff.p, neff.i);
  else {
    setViews(['summary']);
    byId('summary').replaceChildren(
      h('h2', {}, 'Nothing to open'),
      h('p', { class: 'muted', 'data-testid': 'nothing-to-open' }, inv.files.length === 0
        ? 'The folder is empty.'
        : `None of the ${count(inv.files.length, 'picked file')} is a device trace (.ntff), a system trace or a PyTorch memory snapshot. The list on the left says what each file looks like.`),
    );
    progress(null);
    setState('ready');
  }
}

/**
 * Decodes the system trace of each profile of `inv` that has one and was not decoded yet, one at
 * a time and each after the open in progress (`opening`), in the background (a job in the jobs
 * strip; no progress bar, no view changes): the problems of its files (a cut trace.json, a
 * damaged ntrace.pb record) show under the profile's "Open system trace" button before it is
 * clicked, as a device's decode problems show on its card (new-user trial: visible only after the
 * click). The tables are kept, so the open is immediate. Stops when another folder is picked.
 */
async function checkSystemTraces(inv: Inventory): Promise<void> {
  for (const p of inv.profiles) {
    if (!hasSystemTrace(p)) continue;
    await opening;
    if (inventory !== inv) return;
    if (systemProblems.has(p.id)) continue;
    try {
      const result = await client.processSystemAside(p.id);
      if (inventory !== inv) return;
      if (result === null) continue;
      systemProblems.set(p.id, result.problems);
    } catch (e) {
      if (inventory !== inv) return;
      // A cancel in the jobs strip is the user's choice: nothing to report.
      if (e instanceof Cancelled) continue;
      systemProblems.set(p.id, [failureProblem(p.system_files?.[0] ?? null, `the system trace of ${p.root || p.id} could not be decoded`, e)]);
    }
    renderInventory();
  }
}

/** Empties every view (a new folder, or a profile that failed to open). */
function clearWorkspace(): void {
  shown = null;
  document.body.classList.remove('has-result', 'has-system', 'has-memory', 'neff-only');
  memoryShown = null;
  memoryView.setModel(null, null);
  systemShown = null;
  detachLod(systemView);
  systemView.setModel(null);
  byId('summary').replaceChildren(h('div', { class: 'muted' }, 'Pick a profile on the left.'));
  byId('conform').replaceChildren();
  detachLod(timeline);
  timeline.setModel(null);
  timeline.input.select(null);
  browser.setSource(null, []);
  sourceView.setHeat(null);
  selectionBox.replaceChildren(h('div', { class: 'muted' }, SELECTION_HINT));
  setViews(['summary']);
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The profile on screen: what kind, and its key for the URL. */
let shown: { kind: 'device' | 'system' | 'memory'; hash: string; key: string } | null = null;

/** A processed result as the views read it. */
type Result = { key: string; tables: TableInfo[] };
type Source = ReturnType<typeof tableSource>;

/** The open in progress (settled when it is drawn or failed): background decodes wait for it. */
let opening: Promise<void> = Promise.resolve();

/** Opens a profile (`openProfileNow`), recorded as the open in progress (`opening`). */
function openProfile<R extends Result>(o: Parameters<typeof openProfileNow<R>>[0]): Promise<void> {
  const p = openProfileNow(o);
  opening = p.catch(() => {});
  return p;
}

/**
 * The one open-profile sequence of every profile kind: claim the workspace, process in the worker
 * (progress in the top bar), then the summary, the table browser and the kind's own view; a
 * failure empties the workspace and names the profile. `isCurrent` turns false when another open
 * started meanwhile, and the older one then stops quietly.
 */
async function openProfileNow<R extends Result>(o: {
  kind: 'device' | 'system' | 'memory';
  /** URL hash of this profile (`#device=…`). */
  hash: string;
  claim: () => void;
  isCurrent: () => boolean;
  label: string;
  what: string;
  process: (onProgress: (stage: string, done: number, total: number) => void) => Promise<R>;
  views: ViewName[];
  prefer: ViewName;
  sourceName: string;
  firstTable?: string;
  summary: (r: R, source: Source) => void;
  draw: (r: R, source: Source) => Promise<void>;
  /** A NEFF without a trace: only the Summary and Tables, no bottom panel (nothing to click). */
  neffOnly?: boolean;
  /** The decode failed (not cancelled): record it where the sidebar marks the file (before it is redrawn). */
  failed?: (e: unknown) => void;
  drawWhat: string;
}): Promise<void> {
  clearError();
  o.claim();
  renderInventory();
  setState('processing');
  progress(o.label);
  let result: R;
  try {
    result = await o.process((stage, done, total) => progress(`Decoding ${stage}`, done, total));
  } catch (e) {
    // An open superseded by another (or by a newly picked capture) ends quietly.
    if (!o.isCurrent()) return;
    progress(null);
    clearWorkspace();
    renderInventory();
    // A cancel is the user's choice, not a failure: the jobs strip says "cancelled".
    if (e instanceof Cancelled) {
      setState('ready');
      return;
    }
    if (o.failed !== undefined) {
      o.failed(e);
      renderInventory();
    }
    showError(`${o.what} failed: ${message(e)}`, e);
    return;
  }
  if (!o.isCurrent()) return;
  // Only this kind's view keeps a model.
  if (o.kind !== 'device') {
    detachLod(timeline);
    timeline.setModel(null);
    timeline.input.select(null);
    byId('conform').replaceChildren();
    sourceView.setHeat(null);
  }
  if (o.kind !== 'system') {
    detachLod(systemView);
    systemView.setModel(null);
  }
  if (o.kind !== 'memory') memoryView.setModel(null, null);
  // Another kind of profile than the one on screen opens on its preferred view (a system trace
  // opened from the Tables tab shows the System timeline, not its tables).
  const sameKind = shown?.kind === o.kind;
  shown = { kind: o.kind, hash: o.hash, key: result.key };
  // Which kind of profile is on screen (tests and styles read it).
  document.body.classList.remove('has-result', 'has-system', 'has-memory', 'neff-only');
  document.body.classList.add(o.kind === 'device' ? 'has-result' : `has-${o.kind}`);
  if (o.neffOnly === true) document.body.classList.add('neff-only');
  const source = tableSource(result, o.sourceName);
  const summaryAt = performance.now();
  o.summary(result, source);
  // User-timing spans of the Summary's render steps (scripts/bench-lod.mjs reports the longest).
  performance.measure('summary: first render', { start: summaryAt });
  browser.setSource(source, o.firstTable !== undefined ? preferFirst(result.tables, o.firstTable) : result.tables);
  searchBar.reset();
  searchBar.run = o.kind === 'device' ? (q) => client.search(result.key, q, SEARCH_LIMIT) : null;
  byId('details-slot').replaceChildren(o.kind === 'system' ? systemDetails : o.kind === 'device' ? deviceDetails : memoryDetailsNote());
  selectionBox.replaceChildren(h('div', { class: 'muted' }, o.kind === 'device' ? SELECTION_HINT : 'Range selections summarise device profiles.'));
  // A device profile without a single event (a damaged NTFF): no empty timeline to show.
  const events = result.tables.some((t) => ['Instruction', 'DmaPacket', 'SemaphoreUpdate'].includes(t.name) && Number(t.rows) > 0);
  setViews(o.kind === 'device' && !events ? o.views.filter((v) => v !== 'timeline') : o.views, o.prefer, sameKind);
  writeHash(true);
  try {
    await o.draw(result, source);
    if (!o.isCurrent()) return;
    progress(null);
    setState('ready');
  } catch (e) {
    progress(null);
    showError(`${o.drawWhat} could not be drawn: ${message(e)}`, e);
  }
}

function memoryDetailsNote(): HTMLElement {
  return h('div', { class: 'muted' }, 'Hover an allocation in the Memory view for its stack; click for the segment map at that time.');
}

/**
 * Opens device profile `deviceIndex` of `profile`; with `zoom`, the device timeline then shows the
 * execution an nc_exec_running span ran as (ExecutionInfo, see pickExecution).
 */
async function openDevice(profile: ProfileEntry, deviceIndex: number, zoom?: { execId: number | null }, range?: TimeRange): Promise<void> {
  const device = profile.devices[deviceIndex];
  const name = device?.name ?? device?.ntff ?? `${profile.id} device ${deviceIndex}`;
  const isCurrent = (): boolean => selected?.profileId === profile.id && selected.deviceIndex === deviceIndex;
  if (device !== undefined && isNeffOnly(device)) {
    await openNeff(profile, deviceIndex, device.neff ?? name, isCurrent);
    return;
  }
  await openProfile<ProcessResult>({
    kind: 'device',
    hash: `device=${encodeURIComponent(profile.id)}:${deviceIndex}`,
    claim: () => {
      selected = { profileId: profile.id, deviceIndex };
      systemShown = null;
      memoryShown = null;
      timeline.setSummaryPercents(null);
    },
    isCurrent,
    label: 'Processing',
    what: `Processing ${name}`,
    process: (onProgress) => client.process(profile.id, deviceIndex, onProgress),
    views: ['summary', 'timeline', 'source', 'tables', 'compare'],
    prefer: zoom !== undefined ? 'timeline' : 'summary',
    sourceName: name,
    summary: (result, source) => {
      const where = profile.root ? `${profile.root} · ` : '';
      renderSummary(byId('summary'), `${profile.profile_type} profile · ${where}${name}`, result);
      deviceProblems.set(`${profile.id}#${deviceIndex}`, result.problems);
      renderInventory();
      if (device !== undefined) {
        const exports = exportsFor(inventory?.files ?? [], pickedFiles.map((f) => ({ path: f.path, file: f.file })), device);
        renderConform(byId('conform'), exports, (bytes) => client.conform(result.key, bytes));
      }
      void fillSummaryGroups(source, result.tables);
    },
    drawWhat: 'The timeline',
    draw: async (result, source) => {
      progress('Drawing the timeline');
      const hasInstr = result.tables.some((t) => t.name === 'Instruction');
      timeline.rowLoader = (row, table) => source.page(table, row, 1);
      // Rows under the engines come from tables a profile may or may not have (PendingDma is newer).
      const has = (n: string): boolean => result.tables.some((t) => t.name === n && Number(t.rows) > 0);
      const opt = (n: string, cols: string[]): Promise<Table | null> => (has(n) && !lod ? source.columns(n, cols) : Promise.resolve(null));
      delete timeline.root.dataset['zoomExecution'];
      timeline.input.select(null);
      // Fit shows the execution [0, total time], not a stray event (a throttle tick) far outside it.
      const total = Number(result.summary.total_time_ns ?? NaN);
      const fit = Number.isFinite(total) && total > 0 ? { start: 0, end: total } : null;
      // A large profile draws from summaries and windows, never whole columns (views/tracks/).
      const lod = wantsLod(result.tables, DEVICE_LOD_TABLES);
      if (lod) await showDeviceLod(timeline, client, result.key, fit);
      else detachLod(timeline);
      const [instr, dma, semaphores, throttle, pending] = await Promise.all([
        hasInstr && !lod ? source.columns('Instruction', [...INSTRUCTION_COLUMNS]) : Promise.resolve(null),
        opt('DmaPacket', DMA_COLUMNS), opt('SemaphoreUpdate', SEMAPHORE_COLUMNS), opt('Throttle', THROTTLE_COLUMNS), opt('PendingDma', PENDING_DMA_COLUMNS),
      ]);
      if (!isCurrent()) return;
      if (!lod) {
        const model = instr !== null || dma !== null ? buildTimeline(instr ?? emptyInstructions()) : null;
        if (model !== null && fit !== null) {
          model.fitStart = fit.start;
          model.fitEnd = fit.end;
        }
        timeline.setModel(model === null ? null : addDeviceRows(model, { dma, semaphores, throttle, pending }));
      }
      if (zoom !== undefined && result.tables.some((t) => t.name === 'ExecutionInfo' && Number(t.rows) > 0)) {
        const ex = pickExecution(executionRows(await source.columns('ExecutionInfo', ['execution_index', 'execution_start_ts', 'execution_end_ts'])), zoom.execId);
        if (ex !== null && ex.start !== null && ex.end !== null) {
          timeline.zoomTo(ex.start, ex.end);
          timeline.root.dataset['zoomExecution'] = String(ex.index);
        }
      }
      if (range !== undefined) timeline.input.select(range);
      if (hasInstr) {
        progress('Summing device time per source line');
        sourceView.setHeat(await client.sourceHeat(result.key).catch((e: unknown) => {
          console.warn('source heat failed', e);
          return null;
        }));
      }
    },
  });
}

/**
 * Opens a NEFF that no trace ran (pairing NeffOnly): the core decodes the NEFF alone (NeffHeader,
 * TensorInfo, DmaQueuesInfo and the debug tables) and the page shows the program's summary and
 * its tables; no timeline, source heat or comparison (there is no execution to draw).
 */
async function openNeff(profile: ProfileEntry, deviceIndex: number, neffPath: string, isCurrent: () => boolean): Promise<void> {
  const name = neffPath.replace(/^.*\//, '');
  await openProfile<ProcessResult>({
    kind: 'device',
    hash: `device=${encodeURIComponent(profile.id)}:${deviceIndex}`,
    claim: () => {
      selected = { profileId: profile.id, deviceIndex };
      systemShown = null;
      memoryShown = null;
    },
    isCurrent,
    label: `Reading ${name}`,
    what: `Reading the NEFF ${neffPath}`,
    process: (onProgress) => client.process(profile.id, deviceIndex, onProgress),
    views: ['summary', 'tables'],
    prefer: 'summary',
    sourceName: name,
    firstTable: 'TensorInfo',
    neffOnly: true,
    summary: () => {
      byId('summary').replaceChildren(h('h2', {}, `NEFF · ${neffPath}`), h('div', { class: 'muted' }, 'Reading its tensors and DMA queues…'));
    },
    drawWhat: 'The NEFF summary',
    draw: async (result, source) => {
      detachLod(timeline);
      timeline.setModel(null);
      sourceView.setHeat(null);
      const rows = (n: string): number => Number(result.tables.find((t) => t.name === n)?.rows ?? 0);
      const [tensors, queues] = await Promise.all([
        rows('TensorInfo') > 0 ? source.page('TensorInfo', 0, Math.min(NEFF_ROWS_SHOWN, rows('TensorInfo'))) : Promise.resolve(null),
        rows('DmaQueuesInfo') > 0 ? source.page('DmaQueuesInfo', 0, Math.min(NEFF_ROWS_SHOWN, rows('DmaQueuesInfo'))) : Promise.resolve(null),
      ]);
      if (!isCurrent()) return;
      renderNeffSummary(byId('summary'), `NEFF · ${profile.root ? `${profile.root} · ` : ''}${name}`, result, tensors, queues);
    },
  });
}

/** A new main-thread task (setTimeout 0): long renders are split at these points. */
const nextTask = (): Promise<void> => new Promise((ok) => setTimeout(ok, 0));

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
    // A profile opened meanwhile has its own Summary.
    if (box.isConnected) timeline.setSummaryPercents(enginePercents(summary));
    if (!box.isConnected) return;
    // Built a group per task (the panel shows "loading…" until all are attached).
    const at = performance.now();
    await renderSummaryGroups(box, summary, metadata, throttle, nextTask);
    performance.measure('summary: groups', { start: at });
  } catch (e) {
    box.replaceChildren(h('div', { class: 'error-inline' }, `The Summary table could not be read: ${message(e)}`));
  }
}

/** The Summary row's `<engine>_engine_active_time_percent` by engine, in %, or null without one. */
function enginePercents(summary: Table | null): Record<string, number> | null {
  const row = summary !== null && summary.numRows > 0 ? summary.get(0) : null;
  if (row === null || row === undefined) return null;
  const out: Record<string, number> = {};
  for (const [e] of ENGINES) {
    const v = Number((row as Record<string, unknown>)[`${e}_engine_active_time_percent`]);
    // Explorer stores these percents as fractions (0.4167 for 41.67 %).
    if (Number.isFinite(v)) out[e] = 100 * v;
  }
  return Object.keys(out).length > 0 ? out : null;
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
  showView('source');
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
  const isCurrent = (): boolean => systemShown?.profile.id === profile.id && selected === null;
  await openProfile<SystemResult>({
    kind: 'system',
    hash: `system=${encodeURIComponent(profile.id)}`,
    claim: () => {
      selected = null;
      memoryShown = null;
      systemShown = { profile, devices: [] };
    },
    isCurrent,
    label: 'Decoding the system trace',
    what: `Decoding the system trace of ${profile.root || profile.id}`,
    process: (onProgress) => client.processSystem(profile.id, onProgress),
    views: ['summary', 'system', 'tables'],
    prefer: 'system',
    sourceName: `${profile.root || 'system'}-system`,
    firstTable: 'SystemProfileEvents',
    summary: (result) => {
      const where = [profile.instance_id, profile.pid !== null && profile.pid !== undefined ? `pid ${profile.pid}` : null].filter(Boolean).join(' · ');
      renderSystemSummary(byId('summary'), `${profile.profile_type} profile · system trace${where ? ` · ${where}` : ''}`, result);
      systemProblems.set(profile.id, result.problems);
      renderInventory();
    },
    failed: (e) => {
      systemProblems.set(profile.id, [failureProblem(profile.system_files?.[0] ?? null, `the system trace of ${profile.root || profile.id} could not be decoded`, e)]);
    },
    drawWhat: 'The system timeline',
    draw: async (result, source) => {
      progress('Drawing the system timeline');
      const has = (n: string): boolean => result.tables.some((t) => t.name === n && Number(t.rows) > 0);
      const lod = wantsLod(result.tables, SYSTEM_LOD_TABLES, SYSTEM_LOD_ROWS);
      if (!lod) detachLod(systemView);
      const [events, cpu, mem, devs] = await Promise.all([
        has('SystemProfileEvents') && !lod ? source.columns('SystemProfileEvents', SYSTEM_EVENT_COLUMNS) : Promise.resolve(null),
        has('CpuUsage') ? source.columns('CpuUsage', ['timestamp', 'util_percent', 'cpu_id']) : Promise.resolve(null),
        has('HostMemUsage') ? source.columns('HostMemUsage', ['timestamp', 'used_bytes', 'used_percent']) : Promise.resolve(null),
        has('DeviceProfileList') ? source.columns('DeviceProfileList', ['device_profile_name', 'nc_id', 'model_id', 'nscope_link']) : Promise.resolve(null),
      ]);
      if (!isCurrent() || systemShown === null) return;
      systemShown.devices = devs === null ? [] : deviceLinkRows(devs);
      systemView.rowLoader = (row) => source.page('SystemProfileEvents', row, 1);
      const threadNames = new Map(Object.values(result.report.framework ?? {}).flatMap((f) => Object.entries(f.thread_names ?? {})));
      if (lod) await showSystemLod(systemView, client, result.key, cpu, mem, threadNames);
      else systemView.setModel(events === null && cpu === null && mem === null ? null : buildSystemTimeline(events ?? emptyEvents(), cpu, mem, threadNames));
      showFitSpan(systemView.dataBounds());
    },
  });
}

function emptyInstructions(): Table {
  return tableFromArrays({ start_ts: new BigInt64Array(0), end_ts: new BigInt64Array(0) });
}

/** MemoryAllocatorEvent columns the Memory view reads. */
const MEMORY_EVENT_COLUMNS = ['timestamp', 'device', 'action', 'address', 'size', 'stack_id', 'device_free', 'allocated_delta_bytes', 'reserved_delta_bytes'];

async function openMemory(path: string): Promise<void> {
  const isCurrent = (): boolean => memoryShown === path;
  await openProfile<MemoryResult>({
    kind: 'memory',
    hash: `memory=${encodeURIComponent(path)}`,
    claim: () => {
      selected = null;
      systemShown = null;
      memoryShown = path;
    },
    isCurrent,
    label: `Reading ${path.replace(/^.*\//, '')}`,
    what: `Reading the memory snapshot ${path}`,
    process: () => client.processMemory(path),
    views: ['summary', 'memory', 'source', 'tables'],
    prefer: 'memory',
    sourceName: path,
    firstTable: 'MemoryAllocatorEvent',
    summary: (result) => {
      const rep = result.report;
      byId('summary').replaceChildren(h('div', {},
        h('h2', {}, `PyTorch memory snapshot · ${path}`),
        h('div', { class: 'muted small', 'data-testid': 'memory-report' },
          `pickle protocol ${rep.protocol ?? '?'} · ${count(Number(rep.events), 'trace entry', 'trace entries')} · ${count(rep.segments, 'segment')} · ${count(rep.blocks, 'block')} · ${count(rep.stacks, 'distinct stack')} (${count(rep.frames, 'frame')}) · ${count(rep.devices.length, 'device')}`
          + (result.wasm_memory_bytes ? ` · wasm memory ${bytes(result.wasm_memory_bytes)}` : '')),
        foldedProblems(rep.problems)));
      memoryProblems.set(path, rep.problems ?? []);
      renderInventory();
    },
    failed: (e) => {
      memoryProblems.set(path, [failureProblem(path, `${path} could not be read`, e)]);
    },
    drawWhat: 'The memory timeline',
    draw: async (result, source) => {
      const rep = result.report;
      const has = (n: string): boolean => result.tables.some((t) => t.name === n && Number(t.rows) > 0);
      progress('Drawing the memory timeline');
      const [events, blocks, segs, frameIds] = await Promise.all([
        has('MemoryAllocatorEvent') ? source.columns('MemoryAllocatorEvent', MEMORY_EVENT_COLUMNS) : Promise.resolve(null),
        has('MemoryBlock') ? source.columns('MemoryBlock', ['device', 'address', 'size', 'state', 'stack_id']) : Promise.resolve(null),
        has('MemorySegment') ? source.columns('MemorySegment', ['device', 'address', 'total_size', 'stack_id']) : Promise.resolve(null),
        has('MemoryStackFrame') ? source.columns('MemoryStackFrame', ['stack_id']) : Promise.resolve(null),
      ]);
      if (!isCurrent()) return;
      // Row where each stack's frames begin (the table lists them stack by stack).
      const firstRow = new Map<number, [number, number]>();
      const sid = frameIds?.getChild('stack_id');
      for (let i = 0; i < (frameIds?.numRows ?? 0); i++) {
        const s = Number(sid?.get(i) ?? -1);
        const e = firstRow.get(s);
        if (e === undefined) firstRow.set(s, [i, 1]);
        else e[1]++;
      }
      const loader = async (stack: number): Promise<StackFrame[]> => {
        const at = firstRow.get(stack);
        if (at === undefined) return [];
        const t = await source.page('MemoryStackFrame', at[0], at[1]);
        const out: StackFrame[] = [];
        for (let i = 0; i < t.numRows; i++) {
          const r = t.get(i)?.toJSON() as Record<string, unknown> | undefined;
          if (r === undefined) continue;
          const line = r['line'] === null || r['line'] === undefined ? NaN : Number(r['line'] as number | bigint);
          out.push({
            file: typeof r['filename'] === 'string' ? r['filename'] : '',
            line: Number.isFinite(line) ? line : null,
            name: typeof r['name'] === 'string' ? r['name'] : '',
            fx: r['fx_node_name'] ? `${String(r['fx_node_op'] ?? '')} ${String(r['fx_node_name'])}` : '',
          });
        }
        return out;
      };
      const show = (device: number | null): void => {
        memoryView.setModel(buildMemoryModel(events, blocks, segs, rep.devices, device), loader, path);
      };
      memoryView.onDevice = (d) => show(d);
      show(null);
    },
  });
}

/** A decode that failed outright (a crash, an unreadable file) as a problem of `file`, for the sidebar. */
function failureProblem(file: string | null, what: string, e: unknown): Problem {
  return { severity: 'error', code: 'ERROR_PROCESS_INCOMPLETE', file, offset: null, message: `${what}: ${message(e)}` };
}

function emptyEvents(): Table {
  return tableFromArrays({ start_ts: new BigInt64Array(0), end_ts: new BigInt64Array(0) });
}

/** `tables` with `name` first (the table browser opens the first one). */
function preferFirst(tables: TableInfo[], name: string): TableInfo[] {
  return [...tables.filter((t) => t.name === name), ...tables.filter((t) => t.name !== name)];
}

/**
 * Fills the System summary's "Events span" card with the window Fit shows (the runtime and
 * hardware events; CPU and memory sampling often runs far longer), so the two spans on the page
 * say which window each is.
 */
function showFitSpan(b: { fitStart: number; fitEnd: number } | null): void {
  const el = document.querySelector<HTMLElement>('[data-testid=system-fit-span]');
  if (el === null) return;
  const span = b === null ? null : b.fitEnd - b.fitStart;
  el.textContent = span === null ? '–' : ns(span);
  el.dataset['value'] = span === null ? '' : String(span);
}

/** Headline numbers of a decoded system trace. */
function renderSystemSummary(root: HTMLElement, title: string, r: SystemResult): void {
  const rep = r.report;
  const rows = (n: string): number => Number(r.tables.find((t) => t.name === n)?.rows ?? 0);
  const card = (label: string, value: string, testid: string, raw: string | number): HTMLElement =>
    h('div', { class: 'card' }, h('div', { class: 'card-label' }, label),
      h('div', { class: 'card-value', 'data-testid': testid, 'data-value': raw }, value));
  // The runtime files' span widened by the framework traces' (trace.json rows count too).
  const fw = Object.entries(rep.framework ?? {});
  const ends = (xs: (number | null | undefined)[], pick: (a: number, b: number) => number): number | null =>
    xs.reduce<number | null>((m, x) => (x === null || x === undefined ? m : m === null ? Number(x) : pick(m, Number(x))), null);
  const first = ends([rep.first_ts_ns, ...fw.map(([, k]) => k.first_ts_ns)], Math.min);
  const last = ends([rep.last_ts_ns, ...fw.map(([, k]) => k.last_ts_ns)], Math.max);
  const span = first !== null && last !== null ? last - first : null;
  // Event objects and rows differ in a trace.json: a B/E pair is one row, flow and metadata none.
  const files = [
    ...(rep.files ?? []).map((f) => `${f.file} (${int(Number(f.records ?? 0))} records)`),
    ...fw.map(([path, k]) => `${path} (${int(Number(k.objects ?? 0))} event objects → ${int(Number(k.rows ?? 0))} rows)`),
  ];
  // cpu_util.pb holds one record per CPU per sample; CpuUsage adds an `average` row per sample.
  const cpuFile = (rep.files ?? []).find((f) => /(^|\/)cpu_util\.pb$/.test(f.file));
  const cpuSamples = cpuFile === undefined ? rows('CpuUsage') : Number(cpuFile.records ?? 0);
  const cpuAverages = Math.max(0, rows('CpuUsage') - cpuSamples);
  const frameworkRows = fw.reduce((n, [, k]) => n + Number(k.rows ?? 0), 0);
  const runtimeRows = rows('SystemProfileEvents') - frameworkRows;
  // Event kinds: ntrace.pb's event names and each trace.json's categories (`cat`).
  const counts: [string, number, string][] = [
    ...Object.entries(rep.event_counts ?? {}).map(([k, v]): [string, number, string] => [k, Number(v), 'ntrace.pb event']),
    ...fw.flatMap(([path, k]) => Object.entries(k.categories ?? {}).map(([c, v]): [string, number, string] => [c, Number(v), `${path.replace(/^.*\//, '')} cat`])),
  ].sort((a, b) => b[1] - a[1]);
  root.replaceChildren(...nodes(
    h('h2', {}, title),
    h('div', { class: 'cards' },
      card(fw.length > 0 ? `Events (SystemProfileEvents rows: ${int(runtimeRows)} runtime + ${int(frameworkRows)} framework)` : 'Events (SystemProfileEvents rows)',
        int(rows('SystemProfileEvents')), 'system-event-count', rows('SystemProfileEvents')),
      card('Time span (first to last event or CPU / memory sample)', span === null ? '–' : ns(span), 'system-span', span ?? ''),
      card('Events span (what Fit shows on the System view)', '…', 'system-fit-span', ''),
      card(cpuAverages > 0 ? `CPU samples (per CPU; CpuUsage adds ${int(cpuAverages)} average rows)` : 'CPU samples (per CPU)',
        int(cpuSamples), 'system-cpu-samples', cpuSamples),
      card('Host memory samples', int(rows('HostMemUsage')), 'system-mem-rows', rows('HostMemUsage')),
      card('Device profiles', int(rows('DeviceProfileList')), 'system-device-count', rows('DeviceProfileList'))),
    counts.length > 0
      ? h('details', { class: 'problem-fold', 'data-testid': 'system-event-kinds', 'data-value': counts.length },
          h('summary', {}, `${counts.length} event kinds (${int(counts.reduce((n, c) => n + c[1], 0))} rows)`),
          h('table', { class: 'grid' }, h('tbody', {}, counts.map(([k, v, from]) => h('tr', {}, h('td', { class: 'mono' }, k), h('td', { class: 'muted' }, from), h('td', { class: 'num' }, int(v)))))))
      : null,
    files.length > 0 ? h('div', { class: 'muted small' }, 'Files: ', files.join(' · ')) : null,
    (rep.devices ?? []).length > 0
      ? h('ul', { class: 'small' }, (rep.devices ?? []).map((d) => h('li', {}, h('span', { class: 'mono' }, d.ntff), ` — ${d.link}`)))
      : null,
    foldedProblems(r.problems),
  ));
}

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
    view: (name, sort, desc, filters) => client.tableView(result.key, name, sort, desc, filters),
    viewRows: async (name, view, offset, count) => tableFromIPC(await client.viewRows(result.key, name, view, offset, count)),
    viewPosition: (view, row) => client.viewPosition(result.key, view, row),
    columns: async (name, cols) => tableFromIPC(await client.tableColumns(result.key, name, cols)),
    async downloadParquet(name) {
      try {
        download(await client.tableParquet(result.key, name), `${safe}-${name}.parquet`);
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

  buildTabs();
  buildPanel();
  byId('selection-slot').append(selectionBox);
  selectionBox.replaceChildren(h('div', { class: 'muted' }, SELECTION_HINT));
  timeline.input.onSelect = (r) => void showSelection(r);
  window.addEventListener('popstate', () => void applyHash(true));
  byId('timeline-slot').append(searchBar.root, timeline.root);
  // Row ↔ timeline: a clicked event row is revealed on the timeline; "Show in table" goes back.
  searchBar.onReveal = (hit) => void timeline.reveal(hit.table, hit.row, hit.start, hit.end);
  browser.onRowSelect = (table, row, start, end) => {
    if (shown?.kind !== 'device') return;
    showView('timeline');
    void timeline.reveal(table, row, start, end);
  };
  timeline.onShowInTable = (table, row) => {
    showView('tables');
    void browser.showRow(table, row);
  };
  byId('system-slot').append(systemView.root);
  byId('memory-slot').append(memoryView.root);
  // A stack frame's file:line opens the Source view (memory.ts frameItem).
  memoryView.onSource = (loc) => void openSourceLine(loc);
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
    step: step === 'table' || step === 'columns' || step === 'dmaSide' ? step : 'process',
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
      const jobs = h('div', { id: 'jobs' });
      byId('jobs-slot').append(jobs);
      mountJobs(jobs, client, () => {
        selected = null;
        clearWorkspace();
        renderInventory();
      });
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
