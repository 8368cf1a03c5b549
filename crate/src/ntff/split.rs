//! The DMA threads of [`super::decode::decode_split`] (native): one writes every core's
//! `DmaPacket` and `DmaPacketAggregated` rows, the other runs every core's time-ordered pass
//! (`DmaUsage`, the Summary's DMA fields) on the plan the row thread hands over once that core's
//! rows are written (a second scan for the plan cost ≈ 0.3 CPU s per 200 MB), its released
//! packets turned into `DmaUsage` rows on one more ([`super::dma::dma_times_piped`]). Batches
//! cross a bounded channel to the decoding thread, which hands them to the sink between its own
//! batches ([`Merged`]), so the sink is only ever called from that thread.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::{Scope, ScopedJoinHandle};

use arrow_array::RecordBatch;

use super::decode::Window;
use super::dma::{dma_rows_all, dma_times_piped, DmaCoreStats, DmaPlan, RowsTo};
use super::NtffInfo;
use crate::error::{Error, Problem, Result};
use crate::source::ByteSource;
use crate::summary::DmaTimes;
use crate::tables::{TableDef, TableSink};

/// Batches in flight from the two DMA threads (bounded: a `DmaPacket` batch of 64 Ki rows is
/// ≈ 8 MB).
const DEPTH: usize = 4;

/// What the DMA threads read: the NTFF (`src`, shared), its info section and window, the file
/// name for problems, the first `DmaPacket.id`, and the counter of DMA bytes read (progress).
pub(super) struct DmaJob<'a> {
    pub(super) src: &'a (dyn ByteSource + Sync),
    pub(super) info: &'a NtffInfo,
    pub(super) window: Window,
    pub(super) file: &'a str,
    pub(super) first_dma_id: i64,
    pub(super) done: &'a AtomicU64,
}

type Msg = (&'static TableDef, RecordBatch);
/// Per core: the DMA row statistics and the problems of the row pass.
type RowsOut = Vec<(DmaCoreStats, Vec<Problem>)>;

/// A DMA thread's sink: batches go to the decoding thread.
struct Forward(SyncSender<Msg>);

impl TableSink for Forward {
    fn batch(&mut self, def: &'static TableDef, batch: RecordBatch) -> Result<()> {
        self.0
            .send((def, batch))
            .map_err(|_| Error::Other("NTFF decode stopped".into()))
    }
}

/// The running DMA threads of one decode.
pub(super) struct Threads<'scope> {
    rows: ScopedJoinHandle<'scope, Result<RowsOut>>,
    times: ScopedJoinHandle<'scope, Result<Vec<DmaTimes>>>,
}

/// The decoding thread's sink: its own batches, with the DMA threads' batches that arrived
/// meanwhile handed on first.
pub(super) struct Merged<'s> {
    inner: &'s mut dyn TableSink,
    rx: Option<Receiver<Msg>>,
}

impl TableSink for Merged<'_> {
    fn batch(&mut self, def: &'static TableDef, batch: RecordBatch) -> Result<()> {
        if let Some(rx) = &self.rx {
            while let Ok((d, b)) = rx.try_recv() {
                self.inner.batch(d, b)?;
            }
        }
        self.inner.batch(def, batch)
    }
}

/// A thread's result, a panic turned into an error (the scope must not re-raise it).
fn joined<T>(h: ScopedJoinHandle<'_, Result<T>>) -> Result<T> {
    h.join()
        .unwrap_or_else(|_| Err(Error::Other("NTFF DMA thread panicked".into())))
}

impl Merged<'_> {
    /// Hands on the DMA threads' remaining batches, waits for them and returns, per core, the
    /// DMA statistics (with the time-ordered pass's results) and the row pass's problems.
    ///
    /// Errors: the sink's, else a thread's first error.
    pub(super) fn finish(mut self, t: Threads<'_>) -> Result<RowsOut> {
        let mut failed = Ok(());
        if let Some(rx) = self.rx.take() {
            for (d, b) in rx.iter() {
                if let Err(e) = self.inner.batch(d, b) {
                    failed = Err(e);
                    break;
                }
            }
            // Dropped here: a thread blocked on a full channel gets an error and ends.
        }
        let rows = joined(t.rows);
        let times = joined(t.times);
        failed?;
        let mut rows = rows?;
        for ((stats, _), times) in rows.iter_mut().zip(times?) {
            stats.times = times;
        }
        Ok(rows)
    }
}

/// Starts the DMA threads of `job` in `scope` (none without a job) and returns the sink the
/// decoding thread writes to.
pub(super) fn start<'scope, 's>(
    scope: &'scope Scope<'scope, '_>,
    job: Option<DmaJob<'scope>>,
    sink: &'s mut dyn TableSink,
) -> (Merged<'s>, Option<Threads<'scope>>) {
    let Some(job) = job else {
        return (
            Merged {
                inner: sink,
                rx: None,
            },
            None,
        );
    };
    let (tx, rx) = sync_channel(DEPTH);
    let tx2 = tx.clone();
    let DmaJob {
        src,
        info,
        window,
        file,
        first_dma_id,
        done,
    } = job;
    // One plan per core, in core order; unbounded, a plan is small (its runs, ≤ MAX_RUNS).
    let (plan_tx, plan_rx) = channel::<DmaPlan>();
    let rows = scope.spawn(move || {
        catch(|| {
            let mut prog = |n: u64| {
                done.fetch_add(n, Ordering::Relaxed);
            };
            dma_rows_all(
                src,
                info,
                window,
                file,
                first_dma_id,
                RowsTo {
                    sink: &mut Forward(tx),
                    progress: &mut prog,
                    plans: &mut |plan| {
                        // A closed receiver: the time thread ended on an error, reported there.
                        let _ = plan_tx.send(plan);
                    },
                },
            )
        })
    });
    let times = scope.spawn(move || {
        catch(|| {
            let mut sink = Forward(tx2);
            let mut out = Vec::new();
            // The row thread's plans; it stops sending at its first error, which it reports.
            for (sg, plan) in info.subgraphs.iter().zip(plan_rx.iter()) {
                let mut prog = |n: u64| {
                    done.fetch_add(n, Ordering::Relaxed);
                };
                out.push(dma_times_piped(src, info, sg, &plan, &mut sink, &mut prog)?);
            }
            Ok(out)
        })
    });
    (
        Merged {
            inner: sink,
            rx: Some(rx),
        },
        Some(Threads { rows, times }),
    )
}

/// `f()`, a panic turned into an error.
fn catch<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(Error::Other("NTFF DMA thread panicked".into())))
}
