// The worker's file store: processed tables as files of the Origin Private File System (OPFS),
// written and read synchronously from the wasm core through FileSystemSyncAccessHandles
// (crate/src/store.rs `FileStore`). The bytes stay on this machine, in the browser's storage for
// this origin; wasm memory holds only what a read asks for.
//
// Opening a sync handle is asynchronous, but the core asks for a file in the middle of a
// synchronous decode (the first batch of each table): so the store opens a pool of empty files
// before each call that writes (`prepare`) and `create` hands them out. Layout:
// `neuronscope/<worker dir>/<n>.parquet`; which file holds which table is kept by the page
// (client.ts), so a restarted worker re-opens them (`reopen`). The files of earlier page loads
// are deleted when the page starts (`clearStale`; files another open tab holds are locked and kept).

/** Subset of FileSystemSyncAccessHandle used here (typed locally: not in every DOM lib). */
interface SyncHandle {
  read(buf: Uint8Array, opts: { at: number }): number;
  write(buf: Uint8Array, opts: { at: number }): number;
  flush(): void;
  getSize(): number;
  truncate(n: number): void;
  close(): void;
}
interface SyncFileHandle extends FileSystemFileHandle {
  createSyncAccessHandle(): Promise<SyncHandle>;
}

/** Top directory of the store inside the origin's OPFS. */
export const STORE_DIR = 'neuronscope';

/** Free files kept open ahead of a decode: more than the tables any one call writes (49 Explorer tables + the zip). */
const POOL = 64;

interface Slot {
  name: string;
  handle: SyncFileHandle;
  access: SyncHandle;
}
interface Entry extends Slot {
  key: string;
  table: string;
  /** The directory holding the file: this store's, or another worker's for a file handed over (`reopen` of `<dir>/<name>`). */
  dir: FileSystemDirectoryHandle;
  dirName: string;
}

/** A stored file as the page records it (to re-open it in a restarted worker). */
export interface StoredFile {
  table: string;
  /** File name inside the worker's directory, or `<worker dir>/<file name>` for a file another worker wrote. */
  name: string;
}

/** Is OPFS with sync access handles usable here (a dedicated worker of a secure context)? */
export function opfsAvailable(): boolean {
  const nav = (globalThis as { navigator?: Navigator }).navigator;
  const fh = (globalThis as { FileSystemFileHandle?: { prototype: object } }).FileSystemFileHandle;
  return typeof nav?.storage?.getDirectory === 'function' && fh !== undefined && 'createSyncAccessHandle' in fh.prototype;
}

/** Can this context list and delete OPFS files (the page's main thread can, though only a worker can open sync handles)? */
export function opfsListable(): boolean {
  const nav = (globalThis as { navigator?: Navigator }).navigator;
  return typeof nav?.storage?.getDirectory === 'function';
}

type Keys = { keys(): AsyncIterable<string> };

/** Deletes the entries of `dir` that `skip` does not name; returns how many could not be (open files are locked). */
async function removeEntries(dir: FileSystemDirectoryHandle, skip: (name: string) => boolean): Promise<number> {
  const names: string[] = [];
  for await (const f of (dir as unknown as Keys).keys()) names.push(f);
  let locked = 0;
  for (const f of names) {
    if (skip(f)) continue;
    await dir.removeEntry(f, { recursive: true }).catch(() => { locked++; });
  }
  return locked;
}

/**
 * Deletes what earlier page loads left under STORE_DIR, except the directories in `keep` and the
 * files still open (locked: another tab's, or a reloaded page's worker not yet gone). File by
 * file, so one locked file does not keep the rest; returns how many files are left locked.
 */
export async function clearStale(keep: Set<string> = new Set()): Promise<number> {
  const root = await navigator.storage.getDirectory();
  const top = await root.getDirectoryHandle(STORE_DIR, { create: true });
  const dirs: string[] = [];
  for await (const name of (top as unknown as Keys).keys()) dirs.push(name);
  let locked = 0;
  for (const name of dirs) {
    if (keep.has(name)) continue;
    const dir = await top.getDirectoryHandle(name).catch(() => null);
    if (dir === null) {
      await top.removeEntry(name, { recursive: true }).catch(() => {});
      continue;
    }
    locked += await removeEntries(dir, () => false);
    await top.removeEntry(name, { recursive: true }).catch(() => {});
  }
  return locked;
}

/**
 * Deletes the files of this page's directory `dir` (under STORE_DIR) whose names are not in
 * `keep` and that a store made before `before` (ms since the epoch; the name's stamp, see
 * FileStore): what a terminated worker (cancelled, crashed) left there, which no live store
 * knows. Open files (a live worker's) are locked and stay; returns how many stayed.
 */
export async function sweepDir(dir: string, keep: Set<string>, before: number): Promise<number> {
  const root = await navigator.storage.getDirectory();
  const top = await root.getDirectoryHandle(STORE_DIR, { create: true });
  const d = await top.getDirectoryHandle(dir).catch(() => null);
  if (d === null) return 0;
  return removeEntries(d, (f) => keep.has(f) || !(FileStore.madeAt(f) < before));
}

export class FileStore {
  private readonly free: Slot[] = [];
  private readonly files = new Map<number, Entry>();
  private nextId = 1;
  private nextName = 0;
  /** Distinguishes the names of this worker instance from a crashed predecessor's in the same directory. */
  private readonly stamp = Date.now().toString(36);

  private constructor(
    private readonly top: FileSystemDirectoryHandle,
    private readonly dir: FileSystemDirectoryHandle,
    readonly dirName: string,
  ) {}

  /** When the store instance that named file `name` was made (ms since the epoch; NaN: not one of its names). */
  static madeAt(name: string): number {
    return parseInt(name.slice(0, name.indexOf('-')), 36);
  }

  /** The store in `neuronscope/<dirName>` (created if missing). */
  static async open(dirName: string): Promise<FileStore> {
    const root = await navigator.storage.getDirectory();
    const top = await root.getDirectoryHandle(STORE_DIR, { create: true });
    return new FileStore(top, await top.getDirectoryHandle(dirName, { create: true }), dirName);
  }

  /** Opens empty files until `POOL` are free (before any call into the core that writes tables). */
  async prepare(): Promise<void> {
    while (this.free.length < POOL) {
      const name = `${this.stamp}-${this.nextName++}.parquet`;
      const handle = (await this.dir.getFileHandle(name, { create: true })) as SyncFileHandle;
      const access = await handle.createSyncAccessHandle();
      this.free.push({ name, handle, access });
    }
  }

  // The synchronous part, called from the core (crate/src/store.rs). Ids are numbers the core keeps.

  /** A free file for table `table` of profile `key`: its id, or -1 when none is left (the core keeps that table in memory). */
  create(key: string, table: string): number {
    const slot = this.free.pop();
    if (slot === undefined) return -1;
    slot.access.truncate(0);
    const id = this.nextId++;
    this.files.set(id, { ...slot, key, table, dir: this.dir, dirName: this.dirName });
    return id;
  }
  write(id: number, bytes: Uint8Array, at: number): void {
    const n = this.entry(id).access.write(bytes, { at });
    if (n !== bytes.length) throw new Error(`wrote ${n} of ${bytes.length} bytes (is the disk full?)`);
  }
  read(id: number, buf: Uint8Array, at: number): number {
    return this.entry(id).access.read(buf, { at });
  }
  flush(id: number): void {
    this.entry(id).access.flush();
  }

  private entry(id: number): Entry {
    const e = this.files.get(id);
    if (e === undefined) throw new Error(`no stored file ${id}`);
    return e;
  }

  // Asynchronous part, called by the worker between core calls.

  /** The stored file `id` as a File (a snapshot of the OPFS file: nothing is read or copied here). */
  async file(id: number): Promise<File> {
    return this.entry(id).handle.getFile();
  }
  /** The name of file `id` as `reopen` takes it: in this store's directory, or `<dir>/<name>` in another worker's. */
  nameOf(id: number): string {
    const e = this.entry(id);
    return e.dirName === this.dirName ? e.name : `${e.dirName}/${e.name}`;
  }
  /** Re-opens files a previous worker wrote into this directory, or another worker handed over (`<dir>/<name>`); their ids and sizes, in order. */
  async reopen(key: string, files: StoredFile[]): Promise<{ id: number; bytes: number }[]> {
    const out: { id: number; bytes: number }[] = [];
    for (const f of files) {
      const cut = f.name.lastIndexOf('/');
      const dirName = cut < 0 ? this.dirName : f.name.slice(0, cut);
      const name = cut < 0 ? f.name : f.name.slice(cut + 1);
      const dir = cut < 0 ? this.dir : await this.top.getDirectoryHandle(dirName);
      const handle = (await dir.getFileHandle(name)) as SyncFileHandle;
      // The crashed worker's locks go with it, but not always before the new one asks.
      let access: SyncHandle | null = null;
      for (let attempt = 0; access === null; attempt++) {
        try {
          access = await handle.createSyncAccessHandle();
        } catch (e) {
          if (attempt >= 20) throw e;
          await new Promise((ok) => setTimeout(ok, 50));
        }
      }
      const id = this.nextId++;
      this.files.set(id, { name, handle, access, key, table: f.table, dir, dirName });
      out.push({ id, bytes: access.getSize() });
    }
    return out;
  }
  /** Closes the files of profile `key` and forgets them without deleting them (handed to another worker, which re-opens them). */
  forget(key: string): void {
    for (const [id, e] of [...this.files]) {
      if (e.key !== key) continue;
      this.files.delete(id);
      e.access.flush();
      e.access.close();
    }
  }
  /** Deletes file `name` of this store's directory that no entry holds (one handed over and never taken). */
  async removeFree(name: string): Promise<void> {
    for (const e of this.files.values()) if (e.dirName === this.dirName && e.name === name) return;
    await this.dir.removeEntry(name).catch(() => {});
  }
  /** Closes and deletes the files of profile `key` (or of every profile: `null`). */
  async drop(key: string | null): Promise<void> {
    await this.dropWhere((e) => key === null || e.key === key);
  }
  /** Closes and deletes file `table` of profile `key` (e.g. its previous zip). */
  async dropTable(key: string, table: string): Promise<void> {
    await this.dropWhere((e) => e.key === key && e.table === table);
  }
  private async dropWhere(pick: (e: Entry) => boolean): Promise<void> {
    for (const [id, e] of [...this.files]) {
      if (!pick(e)) continue;
      this.files.delete(id);
      e.access.close();
      await e.dir.removeEntry(e.name).catch(() => {});
    }
  }
  /** Bytes stored (every file of this store, the free ones are empty). */
  bytes(): number {
    let n = 0;
    for (const e of this.files.values()) n += e.access.getSize();
    return n;
  }
}
