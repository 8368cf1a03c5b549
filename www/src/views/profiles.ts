// Profile list (left column): what was found in the picked folder, how each NTFF paired with a NEFF,
// and every problem in plain words. Clicking a device opens it.

import type { DeviceEntry, Inventory, InventoryFile, Pairing, Problem, ProfileEntry } from '../api.ts';
import { h, nodes } from '../dom.ts';
import { bytes, count, int } from '../format.ts';

/** Variant name of a PairStatus: {status: "Paired", …}, "MissingNeff" or {"Paired": {…}}. */
export function pairingKind(p: Pairing): string {
  if (typeof p === 'string') return p;
  if (typeof p.status === 'string') return p.status;
  return Object.keys(p)[0] ?? 'Unknown';
}

/** The variant's fields. */
function payload(p: Pairing): Record<string, unknown> {
  if (typeof p === 'string') return {};
  if (typeof p.status === 'string') {
    const { status: _s, ...rest } = p;
    return rest;
  }
  const v = p[pairingKind(p)];
  return v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : { value: v };
}

function words(camel: string): string {
  return camel.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
}

function basename(path: string | null | undefined): string {
  if (path === null || path === undefined) return '';
  const i = path.lastIndexOf('/');
  return i < 0 ? path : path.slice(i + 1);
}

/** True for an entry with a NEFF and no trace: it opens a summary of the compiled program. */
export function isNeffOnly(d: DeviceEntry): boolean {
  return pairingKind(d.pairing) === 'NeffOnly' && d.neff !== null && d.neff !== undefined && d.neff !== '';
}

/** True when the entry opens on a click: an NTFF (paired or not), or a NEFF alone. */
export function isOpenable(d: DeviceEntry): boolean {
  return (d.ntff !== null && d.ntff !== undefined && d.ntff !== '') || isNeffOnly(d);
}

/**
 * `text` (a path or a folder name) in one line that keeps its end: the last path segment (or the
 * last `tail` characters of a long one) never shrinks, the start is cut with an ellipsis by CSS (`.mid-ellipsis`), so the part that tells
 * sibling folders apart (`…_s512`, `…_exec_2`) stays visible. The full text is the title.
 */
export function middleEllipsis(text: string, tail = 16, attrs: Record<string, string> = {}): HTMLElement {
  // Keep the whole last path segment when it is short enough (a folder name, not half of one).
  const slash = text.lastIndexOf('/');
  const last = text.length - slash - 1;
  const cut = slash >= 0 && last <= 2 * tail ? slash + 1 : Math.max(0, text.length - tail);
  return h('span', { class: 'mid-ellipsis', title: text, style: `--tail:${text.length - cut}ch`, ...attrs },
    h('span', { class: 'mid-head' }, text.slice(0, cut)),
    h('span', { class: 'mid-tail' }, text.slice(cut)));
}

/** True when the device's NTFF has a NEFF to decode against. */
export function isPaired(d: DeviceEntry): boolean {
  return pairingKind(d.pairing) === 'Paired';
}

/** The pairing result as a sentence for the user (pairing.md, explorer-schema.md §7). */
export function pairingText(d: DeviceEntry): string {
  const kind = pairingKind(d.pairing);
  const data = payload(d.pairing);
  switch (kind) {
    case 'Paired': {
      const by = typeof data['by'] === 'string' ? ` by ${data['by']}` : '';
      return `paired with ${basename(d.neff) || 'its NEFF'}${by}`;
    }
    case 'MissingNeff':
      return 'no matching NEFF: timing only (add the .neff it ran for names, source and tensors)';
    case 'NeffUnreadable': {
      // A NEFF beside it cut or damaged before its uuid: the one it ran, perhaps.
      const neff = typeof data['neff'] === 'string' ? basename(data['neff']) : 'the NEFF beside it';
      return `${neff} beside it cannot be read (cut or damaged): timing only (copy the .neff again for names, source and tensors)`;
    }
    case 'UuidMismatch': {
      const neff = typeof data['neff'] === 'string' ? ` ${basename(data['neff'])}` : '';
      return `the NEFF${neff} is from a different compilation (uuid mismatch, ERROR_PROCESS_INCOMPLETE)`;
    }
    case 'EmptyNtff':
      return 'empty NTFF: the core was initialised but ran nothing (skipped)';
    case 'NeffOnly':
      return 'NEFF only, no trace ran it: opens its tensors, DMA queues and instructions';
    case 'Ambiguous': {
      const c = Array.isArray(data['candidates']) ? (data['candidates'] as unknown[]).map((x) => basename(String(x))).join(', ') : '';
      return `several NEFFs match (${c}); cannot tell which one ran`;
    }
    case 'Unreadable':
      return `unreadable: ${typeof data['message'] === 'string' ? data['message'] : 'not a valid file'}`;
    default: {
      const extra = Object.keys(data).length > 0 ? ` (${JSON.stringify(data)})` : '';
      return `${words(kind)}${extra}`;
    }
  }
}

function problemItem(p: Problem): HTMLElement {
  const where = p.file ? `${p.file}${p.offset !== null && p.offset !== undefined ? ` @ ${int(p.offset)}` : ''}` : '';
  return h(
    'li',
    { class: `problem sev-${p.severity}`, 'data-testid': 'problem', 'data-code': p.code },
    h('span', { class: 'sev' }, p.severity),
    ' ',
    h('span', { class: 'msg' }, p.message),
    where && !p.message.includes(where) ? h('span', { class: 'where' }, ` — ${where}`) : null,
    h('span', { class: 'code' }, ` ${p.code}`),
  );
}

/** What makes two problems the same one (severity, code, file, offset and message). */
function problemKey(p: Problem): string {
  return `${p.severity}\u0000${p.code}\u0000${p.file ?? ''}\u0000${p.offset ?? ''}\u0000${p.message}`;
}

/** `problems` without repeats: the scan and the decode of one file can report the same problem. */
function uniqueProblems(problems: readonly Problem[]): Problem[] {
  const seen = new Set<string>();
  return problems.filter((p) => {
    const key = problemKey(p);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** A list of problems, or nothing when there are none. */
export function problemList(problems: Problem[] | undefined): HTMLElement | null {
  if (problems === undefined || problems.length === 0) return null;
  const order = { error: 0, warning: 1, info: 2 } as const;
  const sorted = uniqueProblems(problems).sort((a, b) => (order[a.severity] ?? 3) - (order[b.severity] ?? 3));
  return h('ul', { class: 'problems' }, sorted.map(problemItem));
}

/** Problems folded under a summary line when there are many and none is an error. */
export function foldedProblems(all: Problem[] | undefined): HTMLElement | null {
  const problems = all === undefined ? undefined : uniqueProblems(all);
  const list = problemList(problems);
  if (list === null || problems === undefined) return null;
  const errors = problems.filter((p) => p.severity === 'error').length;
  const warnings = problems.filter((p) => p.severity === 'warning').length;
  if (problems.length <= 2 || errors > 0) return list;
  const parts = [errors ? `${errors} error${errors === 1 ? '' : 's'}` : '', warnings ? `${warnings} warning${warnings === 1 ? '' : 's'}` : '', problems.length - errors - warnings ? `${problems.length - errors - warnings} note${problems.length - errors - warnings === 1 ? '' : 's'}` : ''];
  return h('details', { class: 'problem-fold' }, h('summary', {}, parts.filter(Boolean).join(', ')), list);
}

export interface ProfileListOptions {
  selected: { profileId: string; deviceIndex: number } | null;
  onOpen: (profile: ProfileEntry, deviceIndex: number) => void;
  /** Opens a profile's system trace; the action is offered only when given. */
  onOpenSystem?: (profile: ProfileEntry) => void;
  /** Id of the profile whose system trace is shown. */
  systemShown?: string | null;
  /** Opens a PyTorch memory snapshot (Memory view); snapshots are listed only when given. */
  onOpenMemory?: (path: string) => void;
  /** Path of the memory snapshot shown. */
  memoryShown?: string | null;
  /** Problems of each processed device (`profileId#deviceIndex`): a NEFF error there marks the pairing. */
  deviceProblems?: ReadonlyMap<string, readonly Problem[]>;
  /** Problems of each decoded system trace (by profile id), shown under its button. */
  systemProblems?: ReadonlyMap<string, readonly Problem[]>;
  /** Problems of each decoded memory snapshot (by path): an error marks its entry. */
  memoryProblems?: ReadonlyMap<string, readonly Problem[]>;
}

/** Code of Explorer's Missing Data warnings as serialised (crate/src/problem.rs `Code::MissingData`). */
const MISSING_DATA = 'Missing Data';

/**
 * The summary line of a decode's problems (errors and warnings). Explorer's own Missing Data
 * warnings (crate/src/derived.rs `explorer_warnings`: data the capture lacks, e.g. a NEFF
 * without compiler metrics) are no fault of the files, so alone they are notes, not warnings.
 */
export function decodeLabel(own: readonly Problem[]): string {
  const errors = own.filter((p) => p.severity === 'error').length;
  const explorer = own.filter((p) => p.severity === 'warning' && p.code === MISSING_DATA).length;
  const others = own.length - explorer;
  if (errors > 0) return `⚠ ${count(own.length, 'problem')} in the decode (${count(errors, 'error')}; the rows before each fault are kept)`;
  if (others === 0) return `ⓘ ${count(explorer, 'note')} Explorer also gives (data this capture does not hold)`;
  return `⚠ ${count(others, 'warning')} in the decode${explorer > 0 ? `, ${count(explorer, 'note')} Explorer also gives` : ''}`;
}

/**
 * A device card's line for the problems its decode reported (errors and warnings; the
 * profile's own, listed under the profile, and the NEFF error the pairing line names are left
 * out): their count, the first message on hover, the list on expand. Null when there are none.
 * `testid`: `device-problems` on a device card, `system-problems` under a system trace's button.
 */
export function decodeProblems(profile: readonly Problem[], decoded: readonly Problem[], shown?: Problem, testid = 'device-problems'): HTMLElement | null {
  const known = new Set([...profile, ...(shown === undefined ? [] : [shown])].map(problemKey));
  const own = uniqueProblems(decoded).filter((p) => p.severity !== 'info' && !known.has(problemKey(p)));
  if (own.length === 0) return null;
  const errors = own.filter((p) => p.severity === 'error').length;
  const first = own.find((p) => p.severity === 'error') ?? own[0];
  const label = decodeLabel(own);
  const list = problemList(own);
  return h('details', {
    class: `device-problems${errors > 0 ? ' has-errors' : ''}`,
    'data-testid': testid,
    'data-count': own.length,
    'data-errors': errors,
    title: first?.message ?? '',
    // Expanding the list is not opening the profile.
    onclick: (e: Event) => e.stopPropagation(),
    onkeydown: (e: Event) => e.stopPropagation(),
  }, h('summary', {}, label), list);
}

/** The picked files that are PyTorch memory snapshots (`memory_snapshot_rank<N>.pickle`). */
export function memorySnapshots(inv: Inventory): InventoryFile[] {
  return inv.files.filter((f) => f.kind === 'MemorySnapshot');
}

/**
 * What a memory snapshot's entry says: the problems the scan found with the file (`scanned`:
 * the capture's or the pick's, listed there) and those its decode reported (`decoded`), and the
 * first error of either (and how many there are), which marks the entry as a NEFF that cannot be read marks its device.
 */
export function snapshotState(inv: Inventory, path: string, decoded: readonly Problem[]): { scanned: Problem[]; error: Problem | undefined; errors: number; status: string } {
  const scanned = [...(inv.problems ?? []), ...inv.profiles.flatMap((p) => p.problems ?? [])].filter((p) => p.file === path);
  const errs = [...scanned, ...decoded].filter((p) => p.severity === 'error');
  const error = errs[0];
  const status = error === undefined
    ? 'allocator snapshot: open the Memory view'
    : `${basename(path)} cannot be read in full (what was read before the fault is shown): ${error.message}`;
  return { scanned, error, errors: errs.length, status };
}

/** The "Memory snapshots" list: one clickable entry per snapshot. */
function memoryList(inv: Inventory, opts: ProfileListOptions): HTMLElement | null {
  const snaps = memorySnapshots(inv);
  if (snaps.length === 0 || opts.onOpenMemory === undefined) return null;
  return h('div', { class: 'memory-snapshots' },
    h('div', { class: 'profile-head' }, h('span', { class: 'ptype memory' }, 'Memory'), h('span', { class: 'pid' }, count(snaps.length, 'PyTorch memory snapshot'))),
    h('ul', { class: 'devices' }, snaps.map((f) => {
      const decoded = opts.memoryProblems?.get(f.path) ?? [];
      const { scanned, error, errors, status } = snapshotState(inv, f.path, decoded);
      return h('li', {
        class: `device ${error === undefined ? 'paired' : 'unpaired'}${opts.memoryShown === f.path ? ' selected' : ''}`,
        'data-testid': 'memory-snapshot',
        'data-path': f.path,
        'data-errors': errors,
        title: f.path,
        onclick: () => opts.onOpenMemory?.(f.path),
        tabindex: 0,
        role: 'button',
        onkeydown: (e: Event) => activateOnKey(e, () => opts.onOpenMemory?.(f.path)),
      },
      h('div', { class: 'device-name' }, middleEllipsis(basename(f.path), 12),
        f.rank !== null && f.rank !== undefined ? h('span', { class: 'tag' }, `rank ${f.rank}`) : null,
        h('span', { class: 'tag' }, bytes(Number(f.size)))),
      h('div', { class: `pairing ${error === undefined ? 'ok' : 'bad'}`, 'data-testid': 'memory-snapshot-status', title: error?.message ?? '' }, status),
      // The decode's other problems, as a device card lists its own (the error above not again).
      decodeProblems(scanned, decoded, error, 'memory-problems'));
    })));
}

/** Enter or Space on a focused list entry opens it, as a click does. */
function activateOnKey(e: Event, open: () => void): void {
  if (!(e instanceof KeyboardEvent) || (e.key !== 'Enter' && e.key !== ' ')) return;
  e.preventDefault();
  open();
}

/** True for a profile with a host/runtime trace (System, System+Device). */
export function hasSystemTrace(p: ProfileEntry): boolean {
  return p.profile_type === 'System' || p.profile_type === 'System+Device';
}

function typeClass(t: string): string {
  return t.toLowerCase().replace(/[^a-z]+/g, '-');
}

/** Renders the inventory into `root`. */
export function renderProfiles(root: HTMLElement, inv: Inventory, opts: ProfileListOptions): void {
  const total = inv.files.reduce((s, f) => s + Number(f.size), 0);
  const items = inv.profiles.map((p) => {
    const devices = p.devices.map((d, i) => {
      // A NEFF bound by uuid but unreadable is no pairing to trust: say why, not "paired".
      const known = [...(p.problems ?? []), ...(opts.deviceProblems?.get(`${p.id}#${i}`) ?? [])];
      const neffError = known.find((pr) => pr.severity === 'error' && d.neff !== null && d.neff !== undefined && pr.file === d.neff);
      const paired = isPaired(d) && neffError === undefined;
      const sel = opts.selected?.profileId === p.id && opts.selected.deviceIndex === i;
      const openable = isOpenable(d);
      const tags = [
        d.ntff_version !== null && d.ntff_version !== undefined ? `NTFF v${d.ntff_version}` : null,
        d.nc !== null && d.nc !== undefined ? `nc ${d.nc}` : null,
        d.rank !== null && d.rank !== undefined ? `rank ${d.rank}` : null,
        d.exec !== null && d.exec !== undefined ? `exec ${d.exec}` : null,
      ].filter((t): t is string => t !== null);
      return h(
        'li',
        {
          class: `device${paired ? ' paired' : ' unpaired'}${isNeffOnly(d) ? ' neff-only' : ''}${sel ? ' selected' : ''}${openable ? '' : ' static'}`,
          'data-testid': 'device',
          'data-pairing': pairingKind(d.pairing),
          'data-device-index': i,
          title: [d.ntff, d.neff].filter(Boolean).join('\n'),
          onclick: openable ? () => opts.onOpen(p, i) : null,
          tabindex: openable ? 0 : null,
          role: openable ? 'button' : null,
          'aria-current': sel ? 'true' : null,
          onkeydown: openable ? (e: Event) => activateOnKey(e, () => opts.onOpen(p, i)) : null,
        },
        h('div', { class: 'device-name' }, middleEllipsis(d.name || basename(d.ntff) || basename(d.neff) || `device ${i}`, 12), tags.map((t) => h('span', { class: 'tag' }, t))),
        h('div', { class: `pairing ${paired ? 'ok' : 'bad'}`, 'data-testid': 'pairing-status' },
          neffError === undefined ? pairingText(d) : `${basename(d.neff)} cannot be read: ${neffError.message}`),
        decodeProblems(p.problems ?? [], opts.deviceProblems?.get(`${p.id}#${i}`) ?? [], neffError),
      );
    });
    const where = [p.instance_id, p.pid !== null && p.pid !== undefined ? `pid ${p.pid}` : null].filter(Boolean).join(' · ');
    return h(
      'li',
      { class: 'profile', 'data-testid': 'profile', 'data-profile-type': p.profile_type, 'data-profile-id': p.id },
      h('div', { class: 'profile-head' },
        h('span', { class: `ptype ${typeClass(p.profile_type)}`, 'data-testid': 'profile-type' }, p.profile_type),
        middleEllipsis(p.root || p.id, 18, { class: 'mid-ellipsis pid' })),
      where ? h('div', { class: 'profile-where' }, where) : null,
      hasSystemTrace(p) && opts.onOpenSystem !== undefined
        ? h('button', {
            class: `btn small system-open${opts.systemShown === p.id ? ' selected' : ''}`,
            'data-testid': 'open-system',
            title: `Decode the host and runtime trace${p.system_files?.length ? `:\n${p.system_files.join('\n')}` : ''}`,
            onclick: () => opts.onOpenSystem?.(p),
          }, 'Open system trace')
        : null,
      hasSystemTrace(p) ? decodeProblems(p.problems ?? [], opts.systemProblems?.get(p.id) ?? [], undefined, 'system-problems') : null,
      devices.length > 0
        ? h('ul', { class: 'devices' }, devices)
        : h('div', { class: 'muted small' }, 'no device profile (system trace only)'),
      foldedProblems(p.problems),
    );
  });
  root.replaceChildren(
    ...nodes(
    // Memory snapshots are counted beside the profiles (they open a view of their own).
    h('div', { class: 'inv-head', 'data-testid': 'inventory-head' }, [count(inv.files.length, 'file'), bytes(total), count(inv.profiles.length, 'profile'),
      memorySnapshots(inv).length > 0 ? count(memorySnapshots(inv).length, 'memory snapshot') : null].filter(Boolean).join(' · ')),
    memoryList(inv, opts),
    inv.profiles.length === 0 && memorySnapshots(inv).length === 0
      ? h('div', { class: 'empty-note' }, 'No profile found. Pick the folder the Neuron profiler wrote: it holds .ntff files with their .neff, or a capture directory with trace_info.pb and ntrace.pb.')
      : h('ul', { class: 'profiles' }, items),
    // "No profile found" contradicts a listed memory snapshot: the snapshot is what this folder holds.
    foldedProblems(memorySnapshots(inv).length > 0 ? inv.problems?.filter((p) => p.code !== 'NO_PROFILE') : inv.problems),
  ));
}
