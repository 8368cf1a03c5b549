// What the workers are doing: one line per decode (file, worker, stage, bytes, rows, ETA, a
// Cancel button), where the tables are kept (OPFS or memory, with the memory limit said before
// anything is decoded), the bytes stored and a "Clear stored profiles" control.

import type { CoreClient, Job } from '../client.ts';
import { h } from '../dom.ts';
import { bytes, int } from '../format.ts';

/** Seconds left of a stage from its rate so far (null until there is a rate to go by). */
export function etaSeconds(job: Pick<Job, 'done' | 'total' | 'stageStarted' | 'state'>, now: number): number | null {
  if (job.state !== 'running' || job.total <= 0 || job.done <= 0 || job.done >= job.total) return null;
  const elapsed = (now - job.stageStarted) / 1000;
  if (elapsed < 0.5) return null;
  return ((job.total - job.done) * elapsed) / job.done;
}

function duration(s: number): string {
  if (s < 60) return `${Math.ceil(s)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
}

/** System-trace files of a capture directory (inventory.rs): a job over them decodes the system trace. */
const SYSTEM_FILES = /(^|\/)(trace_info|ntrace|cpu_util|host_mem)\.pb$/;

/**
 * What a job decodes, for its line: the file name, or for a system trace (its job lists the
 * capture's `.pb` files, comma-separated) the capture folder's name and "system trace", never one
 * of its files (new-user trial: a system job read `trace_info.pb`).
 */
export function jobName(file: string): string {
  const parts = file.split(', ').filter((p) => p !== '');
  if (parts.length > 1 || SYSTEM_FILES.test(parts[0] ?? '')) {
    const dirs = parts.map((p) => (p.includes('/') ? p.replace(/\/[^/]*$/, '') : ''));
    const dir = dirs.every((d) => d === dirs[0]) ? (dirs[0] ?? '') : '';
    const folder = dir.replace(/^.*\//, '');
    return `${folder || 'capture'} system trace`;
  }
  return (parts[0] ?? file).replace(/^.*\//, '');
}

/** One job as text (also the line's `title`). */
/** Which worker decoded the DMA side of a split decode ('' when not split); a failed one's reason, shortened (the error bar has it whole). */
function splitText(job: Job): string {
  if ((job.helper ?? null) === null) return '';
  const why = job.helperError ?? null;
  if (why === null) return `DMA side${job.piped === true ? ' and Parquet' : ''} on worker ${(job.helper ?? 0) + 1}`;
  return `DMA side redone on worker ${job.worker + 1} (${why.length > 120 ? `${why.slice(0, 119)}…` : why})`;
}

export function jobText(job: Job, now: number): string {
  const name = jobName(job.file);
  const took = ((job.ended ?? now) - job.started) / 1000;
  switch (job.state) {
    case 'running': {
      // Byte stages (NTFF, system files) report bytes; small item counts are shown as n/m.
      const amount = job.total > 4096 ? `${bytes(job.done)} of ${bytes(job.total)}` : job.total > 0 ? `${job.done}/${job.total}` : '';
      const eta = etaSeconds(job, now);
      return [`${name}: ${job.stage}`, amount, job.rows > 0 ? `${int(job.rows)} rows` : '', eta === null ? '' : `about ${duration(eta)} left`]
        .filter((x) => x !== '')
        .join(' · ');
    }
    case 'done':
      if (job.error !== null) {
        // Ended with errors but kept rows (the profile opened): done, with its problems; with
        // nothing of the input kept (the schema listing and the problems alone) it failed.
        if ((job.dataRows ?? job.rows) > 0) {
          const n = job.problems ?? 1;
          const first = job.error.replace(/ \(and \d+ more\)$/, '');
          // Errors, as the profile's card counts them beside its other problems ("N problems (E errors; …)").
          return [`${name}: done in ${duration(took)} with ${n} error${n === 1 ? '' : 's'} (${n > 1 ? 'first: ' : ''}${first})`, `${int(job.dataRows ?? job.rows)} rows kept`, splitText(job)]
            .filter((x) => x !== '').join(' · ');
        }
        return [`${name}: failed after ${duration(took)} (${job.error})`, 'no rows kept', splitText(job)].filter((x) => x !== '').join(' · ');
      }
      return [`${name}: done in ${duration(took)}`, `${int(job.rows)} rows`, job.cleared === true ? 'tables cleared' : `${bytes(job.storedBytes)} stored`,
        `${(job.bytes / 1e6 / Math.max(took, 1e-3)).toFixed(1)} MB/s`, job.wasmMemory > 0 ? `wasm memory ${bytes(job.wasmMemory)}` : '', splitText(job)]
        .filter((x) => x !== '')
        .join(' · ');
    case 'cancelled':
      return `${name}: cancelled after ${duration(took)}`;
    case 'failed':
      return `${name}: failed (${job.error ?? 'unknown error'})`;
  }
}

/** The jobs panel; re-renders on every job change of `client` (at most once per animation frame). */
export function mountJobs(root: HTMLElement, client: CoreClient, onCleared: () => void = () => {}): void {
  root.classList.add('jobs');
  root.dataset['testid'] = 'jobs';
  let queued = false;
  const list = h('ul', { class: 'jobs-list small', 'data-testid': 'jobs-list' });
  const store = h('div', { class: 'muted small', 'data-testid': 'jobs-store' });
  const clear = h('button', { class: 'btn small', 'data-testid': 'clear-stored', title: 'Delete the tables kept in this browser for the profiles opened so far' }, 'Clear stored profiles');
  clear.addEventListener('click', () => {
    clear.setAttribute('disabled', '');
    void client
      .clearStored()
      .then(() => {
        store.textContent = 'Stored profiles cleared; they are decoded again when opened.';
        // The profile on screen read its rows from the deleted files: the page closes it.
        onCleared();
      })
      .catch((e: unknown) => (store.textContent = `Clearing failed: ${e instanceof Error ? e.message : String(e)}`))
      .finally(() => clear.removeAttribute('disabled'));
  });
  root.replaceChildren(store, list, clear);
  store.dataset['store'] = client.store;

  const storeLine = (): string => {
    if (client.store === 'memory') return `Tables in memory: ${client.storeNote ?? 'no local file storage'}.`;
    const stored = client.jobs.filter((j) => j.state === 'done' && j.cleared !== true).reduce((n, j) => n + j.storedBytes, 0);
    return `Tables stored on this machine (browser storage for this page, never uploaded): ${bytes(stored)} · ${client.workers} of up to ${client.maxWorkers} workers`;
  };
  const render = (): void => {
    queued = false;
    const now = performance.now();
    store.textContent = storeLine();
    const jobs = client.jobs.slice(-8);
    list.replaceChildren(
      ...jobs.map((j) => {
        const text = jobText(j, now);
        const cancel = j.state === 'running'
          ? h('button', { class: 'btn small', 'data-testid': 'job-cancel', onclick: () => client.cancel(j.id) }, 'Cancel')
          : null;
        const attrs = { 'data-testid': 'job', 'data-state': j.state, 'data-error': j.error, 'data-problems': j.problems ?? (j.error !== null ? 1 : 0), 'data-worker': j.worker, 'data-helper': j.helper ?? '', 'data-helper-error': j.helperError ?? '', 'data-piped': j.piped === true ? '1' : '', 'data-file': j.file, 'data-rows': j.rows, 'data-stored-bytes': j.storedBytes, 'data-wasm-memory': j.wasmMemory, title: text };
        return h('li', attrs, text, ' ', cancel);
      }),
    );
    root.hidden = client.jobs.length === 0 && client.store === 'opfs';
  };
  const schedule = (): void => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(render);
  };
  const prev = client.onJobs;
  client.onJobs = (jobs) => {
    prev(jobs);
    schedule();
  };
  // The ETA moves between progress reports.
  setInterval(() => {
    if (client.jobs.some((j) => j.state === 'running')) schedule();
  }, 1000);
  schedule();
}
