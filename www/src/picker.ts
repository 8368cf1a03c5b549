// Folder picking, three ways, all yielding File handles with '/'-separated paths that start with the
// picked folder's own name (capture directories like `<instance-id>_pid_<pid>/` carry meaning):
//  - showDirectoryPicker (Chromium): recursive walk of the directory handle;
//  - <input type=file webkitdirectory>: File.webkitRelativePath;
//  - drag and drop of folders or files: DataTransferItem.webkitGetAsEntry(), recursive readEntries.
// Files are never read here; the worker reads slices of them.

import type { PickedFile } from './protocol.ts';

/** Minimal File System Access API surface (not in every TypeScript DOM lib). */
interface FsHandle {
  kind: 'file' | 'directory';
  name: string;
}
interface FsFileHandle extends FsHandle {
  kind: 'file';
  getFile(): Promise<File>;
}
interface FsDirHandle extends FsHandle {
  kind: 'directory';
  values(): AsyncIterable<FsFileHandle | FsDirHandle>;
}
type DirectoryPicker = (options?: { mode?: 'read'; id?: string }) => Promise<FsDirHandle>;

/** The File System Access directory picker, when this browser has one. */
export function directoryPicker(): DirectoryPicker | null {
  const w = window as unknown as { showDirectoryPicker?: DirectoryPicker };
  return typeof w.showDirectoryPicker === 'function' ? w.showDirectoryPicker.bind(window) : null;
}

async function walkHandle(dir: FsDirHandle, prefix: string, out: PickedFile[]): Promise<void> {
  for await (const h of dir.values()) {
    const path = `${prefix}/${h.name}`;
    if (h.kind === 'file') out.push({ path, file: await h.getFile() });
    else await walkHandle(h, path, out);
  }
}

/** Opens the directory picker; null when the user cancelled. */
export async function pickWithDirectoryPicker(picker: DirectoryPicker): Promise<PickedFile[] | null> {
  let dir: FsDirHandle;
  try {
    dir = await picker({ mode: 'read', id: 'neuronscope-capture' });
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') return null;
    throw e;
  }
  const out: PickedFile[] = [];
  await walkHandle(dir, dir.name, out);
  return out;
}

/** Folder that loose picked files (no folder of their own) are listed under. */
export const LOOSE_FOLDER = 'picked files';

/**
 * Gives loose files (a path without '/') the folder LOOSE_FOLDER, so their profile is named for
 * it rather than ".", and a file whose path is already taken (two `x.ntff` from different folders)
 * the next free folder `picked files (2)/…`: two files never collapse into one.
 */
export function uniquePaths(files: PickedFile[]): PickedFile[] {
  const taken = new Set<string>();
  return files.map((f) => {
    let path = f.path.includes('/') ? f.path : `${LOOSE_FOLDER}/${f.path}`;
    const name = path.slice(path.lastIndexOf('/') + 1);
    for (let n = 2; taken.has(path); n++) path = `${LOOSE_FOLDER} (${n})/${name}`;
    taken.add(path);
    return { path, file: f.file };
  });
}

/** Files of an `<input type=file webkitdirectory>` (or a plain multi-file input). */
export function filesFromInput(list: FileList): PickedFile[] {
  const out: PickedFile[] = [];
  for (const file of Array.from(list)) {
    const rel = file.webkitRelativePath;
    out.push({ path: rel !== '' ? rel : file.name, file });
  }
  return uniquePaths(out);
}

function readAllEntries(reader: FileSystemDirectoryReader): Promise<FileSystemEntry[]> {
  return new Promise((resolve, reject) => {
    const all: FileSystemEntry[] = [];
    // readEntries returns batches (Chromium: 100) until an empty one.
    const next = (): void =>
      reader.readEntries((batch) => {
        if (batch.length === 0) resolve(all);
        else {
          all.push(...batch);
          next();
        }
      }, reject);
    next();
  });
}

function entryFile(entry: FileSystemFileEntry): Promise<File> {
  return new Promise((resolve, reject) => entry.file(resolve, reject));
}

async function walkEntry(entry: FileSystemEntry, out: PickedFile[]): Promise<void> {
  const path = entry.fullPath.replace(/^\/+/, '');
  if (entry.isFile) {
    out.push({ path, file: await entryFile(entry as FileSystemFileEntry) });
  } else if (entry.isDirectory) {
    const children = await readAllEntries((entry as FileSystemDirectoryEntry).createReader());
    for (const c of children) await walkEntry(c, out);
  }
}

/**
 * Files of a drop. Entries must be taken synchronously inside the drop handler (the DataTransfer is
 * emptied afterwards), so this takes them first and walks them after.
 */
export function filesFromDrop(dt: DataTransfer): Promise<PickedFile[]> {
  const entries: FileSystemEntry[] = [];
  const loose: File[] = [];
  for (const item of Array.from(dt.items)) {
    if (item.kind !== 'file') continue;
    const entry = item.webkitGetAsEntry();
    if (entry !== null) entries.push(entry);
    else {
      const f = item.getAsFile();
      if (f !== null) loose.push(f);
    }
  }
  return (async () => {
    const out: PickedFile[] = loose.map((file) => ({ path: file.name, file }));
    for (const e of entries) await walkEntry(e, out);
    return uniquePaths(out);
  })();
}
