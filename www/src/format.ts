// Number formatting for a profiler: times in ns (Explorer's unit), sizes in bytes.

const nf = new Intl.NumberFormat('en-US');

/** 1234567 → "1,234,567". Accepts numbers and bigints. */
export function int(v: number | bigint): string {
  return nf.format(v);
}

/** Duration or timestamp in ns → "812 ns", "12.35 µs", "1.204 ms", "2.5 s". */
export function ns(v: number): string {
  const a = Math.abs(v);
  if (a < 1e3) return `${trim(v, 0)} ns`;
  if (a < 1e6) return `${trim(v / 1e3, 3)} µs`;
  if (a < 1e9) return `${trim(v / 1e6, 3)} ms`;
  return `${trim(v / 1e9, 3)} s`;
}

function trim(v: number, digits: number): string {
  return Number(v.toFixed(digits)).toString();
}

/** Byte count → "41 KiB" style. */
export function bytes(v: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let x = v;
  let u = 0;
  while (x >= 1024 && u < units.length - 1) {
    x /= 1024;
    u++;
  }
  return `${u === 0 ? x : x.toFixed(x < 10 ? 1 : 0)} ${units[u]}`;
}

/** A cell value from an Arrow row → display text (bigint-safe, null → empty). */
export function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return Number.isInteger(v) ? v.toString() : v.toPrecision(6);
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (v instanceof Uint8Array) return `0x${Array.from(v.subarray(0, 32), (b) => b.toString(16).padStart(2, '0')).join('')}${v.length > 32 ? '…' : ''}`;
  try {
    return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
  } catch {
    return String(v);
  }
}

/** Axis tick label for time `t` (ns) on an axis with spacing `step` (ns): enough digits to tell ticks apart. */
export function tick(t: number, step: number): string {
  const span = Math.max(Math.abs(t), step);
  const [div, unit] = span >= 1e9 ? [1e9, 's'] : span >= 1e6 ? [1e6, 'ms'] : span >= 1e3 ? [1e3, 'µs'] : [1, 'ns'];
  const digits = Math.min(9, Math.max(0, Math.ceil(-Math.log10(step / div) - 1e-9)));
  return `${(t / div).toFixed(digits)} ${unit}`;
}

/** A "nice" axis step (1, 2, 5 × 10^k ns) of at least `minNs`. */
export function niceStep(minNs: number): number {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(minNs, 1e-6))));
  for (const m of [1, 2, 5, 10]) if (m * p >= minNs) return m * p;
  return 10 * p;
}

/** `n noun` with the plural `s` when n ≠ 1 ("1 file", "2 files"); `plural` for irregular nouns. */
export function count(n: number | bigint, noun: string, plural = `${noun}s`): string {
  const v = Number(n);
  return `${int(v)} ${v === 1 ? noun : plural}`;
}
