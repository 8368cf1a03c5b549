// Page entry: folder picking, the worker proxy, and the views. State is shown on <body data-state>:
// boot → idle → loading → processing → ready (or error), which the browser tests wait on.

import { tableFromIPC, type Table } from 'apache-arrow';
import type { Inventory, ProcessResult, ProfileEntry } from './api.ts';
import { CoreClient } from './client.ts';
import { byId, download, h } from './dom.ts';
import { bytes, int } from './format.ts';
import { directoryPicker, filesFromDrop, filesFromInput, pickWithDirectoryPicker } from './picker.ts';
import type { PickedFile } from './protocol.ts';
import { isPaired, renderProfiles } from './views/profiles.ts';
import { renderSummary } from './views/summary.ts';
import { TableBrowser, type TableSource } from './views/tables.ts';
import { buildTimeline } from './views/timeline-model.ts';
import { TimelineView } from './views/timeline.ts';

type State = 'boot' | 'idle' | 'loading' | 'processing' | 'ready' | 'error';

const client = new CoreClient();
const timeline = new TimelineView();
const browser = new TableBrowser();

let inventory: Inventory | null = null;
let selected: { profileId: string; deviceIndex: number } | null = null;
let coreReady: Promise<void> = Promise.resolve();

function setState(s: State): void {
  document.body.dataset['state'] = s;
}

function showError(message: string): void {
  const box = byId('error');
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
    progress(`Scanning ${int(list.length)} files`);
    showInventory(await client.load(list));
  } catch (e) {
    progress(null);
    showError(`Could not read the folder: ${message(e)}`);
  }
}

async function loadDemo(): Promise<void> {
  clearError();
  setState('loading');
  progress('Loading the demo capture');
  try {
    await coreReady;
    showInventory(await client.demo());
  } catch (e) {
    progress(null);
    showError(`Could not load the demo capture: ${message(e)}`);
  }
}

function showInventory(inv: Inventory): void {
  inventory = inv;
  selected = null;
  document.body.classList.add('has-capture');
  renderInventory();
  clearWorkspace();
  // Open the first device that can be decoded (paired), else the first device at all.
  const candidates = inv.profiles.flatMap((p) =>
    p.devices.flatMap((d, i) => (d.ntff ? [{ p, i, ok: isPaired(d) }] : [])),
  );
  const first = candidates.find((c) => c.ok) ?? candidates[0];
  if (first !== undefined) void openDevice(first.p, first.i);
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
  document.body.classList.remove('has-result');
  byId('summary').replaceChildren(h('div', { class: 'muted' }, 'Pick a device profile on the left.'));
  timeline.setModel(null);
  browser.setSource(null, []);
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

async function openDevice(profile: ProfileEntry, deviceIndex: number): Promise<void> {
  clearError();
  selected = { profileId: profile.id, deviceIndex };
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
    showError(`Processing ${name} failed: ${message(e)}`);
    return;
  }
  if (selected?.profileId !== profile.id || selected.deviceIndex !== deviceIndex) return;
  const where = profile.root ? `${profile.root} · ` : '';
  renderSummary(byId('summary'), `${profile.profile_type} profile · ${where}${name}`, result);
  document.body.classList.add('has-result');
  const source = tableSource(result, name);
  browser.setSource(source, result.tables);
  try {
    progress('Drawing the timeline');
    const hasInstr = result.tables.some((t) => t.name === 'Instruction');
    timeline.rowLoader = (row) => source.page('Instruction', row, 1);
    timeline.setModel(hasInstr ? buildTimeline(await source.columns('Instruction', TIMELINE_COLUMNS)) : null);
    progress(null);
    setState('ready');
  } catch (e) {
    progress(null);
    showError(`The timeline could not be drawn: ${message(e)}`);
  }
}

/** Instruction columns the timeline draws from or shows on hover (the rest load per click). */
const TIMELINE_COLUMNS = ['start_ts', 'end_ts', 'engine', 'pcore_idx', 'opcode', 'pc', 'evt_wait_time_ns', 'bir_instruction_name'];

function tableSource(result: ProcessResult, deviceName: string): TableSource & { columns(name: string, cols: string[]): Promise<Table> } {
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
        showError(`Parquet export of ${name} failed: ${message(e)}`);
      }
    },
    async downloadAll() {
      try {
        download(await client.bundle(result.key), `${safe}-tables.zip`, 'application/zip');
      } catch (e) {
        showError(`Zip export failed: ${message(e)}`);
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
    if (input.files !== null && input.files.length > 0) void loadFiles(filesFromInput(input.files), 'the folder');
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

  byId('timeline-slot').append(timeline.root);
  byId('tables-slot').append(browser.root);
  client.onFatal = (m) => showError(`The processing worker stopped: ${m}`);
}

function boot(): void {
  setState('boot');
  wire();
  const pkgUrl = new URL('pkg/neuronscope.js', document.baseURI).href;
  coreReady = client.init(pkgUrl).then(
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
