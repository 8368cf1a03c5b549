// Tiny DOM helpers: the app is small enough not to need a framework.

type Attrs = Record<string, string | number | boolean | null | undefined | ((ev: Event) => void)>;
type Child = Node | string | number | null | undefined | false;

/** Creates an element; `on*` attributes that are functions become event listeners. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v);
    else if (k === 'class') el.className = String(v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

/** The element with this id; throws when the page lacks it (a bug, not a data problem). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`missing #${id}`);
  return el as T;
}

/** Offers `bytes` as a file download (blob: URL, no network). */
export function download(bytes: Uint8Array | Blob, name: string, type = 'application/octet-stream'): void {
  // A Blob (e.g. a stored OPFS file) is wrapped, not read.
  const blob = new Blob([bytes as Uint8Array<ArrayBuffer> | Blob], { type });
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name, style: 'display:none' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** Drops null/false entries so optional children can be written inline. */
export function nodes(...items: (Node | string | null | undefined | false)[]): (Node | string)[] {
  return items.filter((x): x is Node | string => x !== null && x !== undefined && x !== false);
}
