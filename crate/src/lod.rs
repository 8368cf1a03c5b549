//! Level-of-detail summaries for the timelines, built while the tables stream, and the reader of
//! the raw rows of one time window.
//!
//! [`LodCollector`] is a [`TableSink`] put in front of the real sink (like
//! [`crate::summary::SummaryCollector`]): it watches the event batches as they pass and keeps, per
//! timeline track, a grid of time buckets (busy time, event count, dominant opcode or name, value
//! range). A grid never holds more than its kind's cap of buckets: when an event falls outside
//! it, the bucket width doubles and neighbouring buckets merge, so the state is bounded by the
//! number of tracks, not by the rows. [`Lod::query`] answers a window at the coarsest level the
//! caller's bucket count asks for (a ladder of power-of-two multiples of the finest width).
//!
//! [`window_rows`] reads the rows of a stored Parquet table whose time range overlaps a window:
//! row groups (one per batch, `sink::parquet_props`) are skipped on the min/max statistics of
//! the time columns, so the answer is correct however rows are ordered across row groups (the
//! decoder interleaves engines and cores within a batch), and reads are bounded by a row limit.
//!
//! Tracks (the rows the page draws; the same keys as `www/src/views/device-rows.ts` and
//! `system-model.ts`):
//!
//! | kind | table | one track per | dominant | value |
//! |---|---|---|---|---|
//! | `engine` | `Instruction` | (`pcore_idx`, `engine`) | `opcode` | – |
//! | `dma` | `DmaPacket` | (`pcore_idx`, `queue_name`) | `queue_type` | – |
//! | `semaphore` | `SemaphoreUpdate` | (`pcore_idx`, `id`) | – | `value` |
//! | `pending` | `PendingDma` | `pcore_idx` | – | `value` |
//! | `throttle` | `Throttle` | `pcore_idx` | `type k/n` | – |
//! | `system` | `SystemProfileEvents` | runtime/framework (source, pid, tid); hardware `pcore_idx` (else `nc_idx`) | `name` | – |
//! | `cpu` | `CpuUsage` | `cpu_id` | – | `util_percent` |
//! | `hostmem` | `HostMemUsage` | one | – | `used_bytes` |
//!
//! Times are int64 ns as in the tables (device: ns from the execution start; system: Unix ns,
//! docs/format/README.md "Time rules").

use rustc_hash::FxHashMap;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::tables::{StrCol, TableDef, TableSink};

/// Bucket cap of an engine or system span track: 16 Ki buckets of 48 B = 768 KiB at most per
/// track (a handful per core); a fitted 2 000-pixel view uses an eighth of them, so mid zoom
/// (up to 8×) still has a bucket per pixel before the window's rows take over.
pub const SLICE_BUCKETS: usize = 16 * 1024;
/// Bucket cap of a DMA queue or throttle track: 4 Ki (192 KiB). A v6 core has dozens of queues
/// (104 on the 200 MB synthetic capture: 20 MB of buckets at most).
pub const QUEUE_BUCKETS: usize = 4 * 1024;
/// Bucket cap of a value track (semaphores: hundreds per core, mostly set a few times; counters):
/// 1 Ki (48 KiB).
pub const VALUE_BUCKETS: usize = 1024;
/// Distinct dominant names kept per collector; later ones share the last code (`"…"`).
pub const MAX_NAMES: usize = 65_535;

/// What a track draws (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrackKind {
    /// Instructions of one engine of one physical core.
    Engine,
    /// DMA packets of one queue of one physical core.
    Dma,
    /// Updates of one semaphore of one physical core (a step function of `value`).
    Semaphore,
    /// Pending DMA count of one physical core (a step function).
    Pending,
    /// Throttle records of one physical core.
    Throttle,
    /// System spans of one thread (runtime, framework) or one NeuronCore (hardware).
    System,
    /// CPU utilisation samples of one CPU (or `average`), percent.
    Cpu,
    /// Host memory samples, bytes used.
    Hostmem,
}

impl TrackKind {
    fn cap(self) -> usize {
        match self {
            TrackKind::Semaphore | TrackKind::Pending | TrackKind::Cpu | TrackKind::Hostmem => {
                VALUE_BUCKETS
            }
            TrackKind::Dma | TrackKind::Throttle => QUEUE_BUCKETS,
            TrackKind::Engine | TrackKind::System => SLICE_BUCKETS,
        }
    }
}

/// One time bucket: what the events starting or running in it add up to.
#[derive(Debug, Clone, Copy, Serialize, serde::Deserialize)]
struct Bucket {
    /// Summed overlap of the events with the bucket, ns (overlapping events count twice).
    busy: f64,
    /// Events starting in the bucket.
    count: u32,
    /// Majority-vote candidate (weighted Boyer–Moore) among the names, and its weight.
    dom: u32,
    dom_w: f64,
    /// Smallest, largest and last value set in the bucket (NaN: none).
    vmin: f64,
    vmax: f64,
    last: f64,
}

impl Bucket {
    const EMPTY: Bucket = Bucket {
        busy: 0.0,
        count: 0,
        dom: u32::MAX,
        dom_w: 0.0,
        vmin: f64::NAN,
        vmax: f64::NAN,
        last: f64::NAN,
    };

    /// Adds weight `w` for name `code` (Boyer–Moore majority vote, weighted): the kept name is
    /// exact whenever one name holds more than half the weight.
    fn vote(&mut self, code: u32, w: f64) {
        if code == u32::MAX || w <= 0.0 {
            return;
        }
        if self.dom == code {
            self.dom_w += w;
        } else if self.dom_w < w {
            self.dom = code;
            self.dom_w = w - self.dom_w;
        } else {
            self.dom_w -= w;
        }
    }

    fn value(&mut self, v: f64) {
        if v.is_nan() {
            return;
        }
        self.vmin = if self.vmin.is_nan() {
            v
        } else {
            self.vmin.min(v)
        };
        self.vmax = if self.vmax.is_nan() {
            v
        } else {
            self.vmax.max(v)
        };
        self.last = v;
    }

    /// Folds `o` (a later bucket) into this one.
    fn merge(&mut self, o: &Bucket) {
        self.busy += o.busy;
        self.count += o.count;
        self.vote(o.dom, o.dom_w);
        if !o.vmin.is_nan() {
            self.value(o.vmin);
            self.value(o.vmax);
            self.last = o.last;
        }
    }
}

/// A bounded grid of buckets of width `width` ns covering bucket indexes `base ..`.
#[derive(Debug, Clone)]
struct Grid {
    width: i64,
    base: i64,
    cap: usize,
    buckets: Vec<Bucket>,
}

impl Grid {
    /// The bucket index of time `t`: `t.div_euclid(width)`, as a shift when the width is a power
    /// of two (always, but for a saturated width or one read from another worker): a 64-bit
    /// division per call was ≈ 7 % of the page's decode step natively.
    #[inline]
    fn index(&self, t: i64) -> i64 {
        let w = self.width;
        if w > 0 && w & (w - 1) == 0 {
            t >> w.trailing_zeros()
        } else {
            t.div_euclid(w)
        }
    }

    fn new(cap: usize) -> Grid {
        Grid {
            width: 1,
            base: 0,
            cap,
            buckets: Vec::new(),
        }
    }

    /// Doubles the width until bucket indexes of `s ..= e` and the present ones fit in `cap`,
    /// merging pairs, then extends the vector to cover them.
    fn fit(&mut self, s: i64, e: i64) {
        if self.buckets.is_empty() {
            while self.index(e) - self.index(s) >= self.cap as i64 {
                self.width = self.width.saturating_mul(2);
            }
            self.base = self.index(s);
            return;
        }
        loop {
            let lo = self.base.min(self.index(s));
            let hi = (self.base + self.buckets.len() as i64 - 1).max(self.index(e));
            if hi - lo < self.cap as i64 {
                break;
            }
            self.coarsen();
        }
        let first = self.index(s);
        if first < self.base {
            let add = (self.base - first) as usize;
            // Exact: the loop above keeps len + add within the cap (the memory bound).
            self.buckets.reserve_exact(add);
            self.buckets
                .splice(0..0, std::iter::repeat_n(Bucket::EMPTY, add));
            self.base = first;
        }
    }

    /// Doubles the width, merging bucket pairs in place: output bucket `j` comes from inputs
    /// `i >= j` only, so each input is read before its slot is reused, in the same order as a
    /// fresh vector would merge them; the vector keeps its capacity (no regrowth after).
    fn coarsen(&mut self) {
        let nb = self.base.div_euclid(2);
        let mut out = 0usize;
        for i in 0..self.buckets.len() {
            let b = self.buckets[i];
            let j = ((self.base + i as i64).div_euclid(2) - nb) as usize;
            if j >= out {
                self.buckets[j] = Bucket::EMPTY;
                out = j + 1;
            }
            self.buckets[j].merge(&b);
        }
        self.buckets.truncate(out);
        self.base = nb;
        self.width = self.width.saturating_mul(2);
    }

    fn slot(&mut self, idx: i64) -> &mut Bucket {
        let j = (idx - self.base) as usize;
        let len = self.buckets.len();
        if j >= len {
            // Grow by doubling the capacity (not the length: a bucket appended past a full
            // vector would reallocate every time) but never past the cap: capacity is the
            // memory bound.
            let have = self.buckets.capacity();
            if j >= have {
                let want = (j + 1).max(have * 2).min(self.cap.max(j + 1));
                self.buckets.reserve_exact(want - len);
            }
            self.buckets.resize(j + 1, Bucket::EMPTY);
        }
        &mut self.buckets[j]
    }

    /// Adds an event `[s, e]` (ns, `e >= s`) named `code` with value `v` (NaN: none).
    fn add(&mut self, s: i64, e: i64, code: u32, v: f64) {
        self.fit(s, e);
        let w = self.width;
        let (i0, i1) = (self.index(s), self.index(e));
        {
            let b = self.slot(i0);
            b.count += 1;
            b.value(v);
        }
        if e == s {
            // An instant: its vote weighs one.
            self.slot(i0).vote(code, 1.0);
            return;
        }
        for i in i0..=i1 {
            let lo = s.max(mul_sat(i, w));
            let hi = e.min(mul_sat(i + 1, w));
            let d = (hi - lo).max(0) as f64;
            let b = self.slot(i);
            b.busy += d;
            b.vote(code, d);
        }
    }
}

/// A track's identity and totals, as listed to the page ([`Lod::tracks`]).
#[derive(Debug, Clone, Serialize)]
pub struct TrackInfo {
    /// Index for [`Lod::query`].
    pub id: u32,
    /// What the track draws.
    pub kind: TrackKind,
    /// The table its rows come from.
    pub table: &'static str,
    /// Physical core (device tracks; system hardware tracks: the NeuronCore), else -1.
    pub pcore: i64,
    /// The grouping value: engine, queue name, semaphore id, throttle/pending "", system group
    /// key (`neuron_rt:<pid>:<tid>`, `framework:<pid>:<tid>`, `hw:<core>`), CPU id.
    pub name: String,
    /// System tracks: the event source, process and thread (null for hardware tracks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<i64>,
    /// Rows of the table on this track.
    pub rows: u64,
    /// Earliest start and latest end, ns relative to [`Lod::origin`].
    pub start: f64,
    pub end: f64,
    /// Longest event, ns (how far before a window an event can start and reach into it).
    pub max_dur: f64,
    /// Smallest and largest value (value tracks; NaN serialises as null).
    pub vmin: Option<f64>,
    pub vmax: Option<f64>,
    /// Bucket width of the finest level kept, ns.
    pub width: i64,
}

#[derive(Debug, Clone)]
struct Track {
    info: TrackInfo,
    lo: i64,
    hi: i64,
    grid: Grid,
}

/// The summaries of one processed profile: tracks, their grids and the name dictionary.
#[derive(Debug, Clone, Default)]
pub struct Lod {
    tracks: Vec<Track>,
    /// Tracks by grouping value, then (kind, pcore): looked up by `&str`, no key allocated.
    index: FxHashMap<String, Vec<(TrackKind, i64, u32)>>,
    names: Vec<String>,
    name_index: FxHashMap<String, u32>,
    /// Axis time 0 of [`Lod::query`] and [`TrackInfo::start`], in the tables' ns.
    pub origin: i64,
}

/// What the page gets from [`Lod::listing`].
#[derive(Debug, Clone, Serialize)]
pub struct Listing<'a> {
    /// Axis time 0 in the tables' ns, as decimal text (system times are beyond 2^53).
    pub origin: String,
    /// Earliest start and latest end over every track, ns from `origin`.
    pub start: f64,
    pub end: f64,
    /// The dominant-name dictionary ([`Lod::query`]'s `dom` codes index it).
    pub names: &'a [String],
    /// Every track.
    pub tracks: Vec<&'a TrackInfo>,
}

/// Fields per output bucket of [`Lod::query`].
pub const QUERY_FIELDS: usize = 8;

impl Lod {
    fn name_code(&mut self, s: &str) -> u32 {
        if let Some(&c) = self.name_index.get(s) {
            return c;
        }
        if self.names.len() >= MAX_NAMES {
            return (MAX_NAMES - 1) as u32;
        }
        let c = self.names.len() as u32;
        let key = if self.names.len() == MAX_NAMES - 1 {
            "…"
        } else {
            s
        };
        self.names.push(key.to_string());
        self.name_index.insert(s.to_string(), c);
        c
    }

    fn track(&mut self, kind: TrackKind, table: &'static str, pcore: i64, name: &str) -> usize {
        if let Some(&(_, _, i)) = self
            .index
            .get(name)
            .and_then(|v| v.iter().find(|&&(k, p, _)| k == kind && p == pcore))
        {
            return i as usize;
        }
        let id = self.tracks.len() as u32;
        self.tracks.push(Track {
            info: TrackInfo {
                id,
                kind,
                table,
                pcore,
                name: name.to_string(),
                source: None,
                pid: None,
                tid: None,
                rows: 0,
                start: 0.0,
                end: 0.0,
                max_dur: 0.0,
                vmin: None,
                vmax: None,
                width: 1,
            },
            lo: i64::MAX,
            hi: i64::MIN,
            grid: Grid::new(kind.cap()),
        });
        self.index
            .entry(name.to_string())
            .or_default()
            .push((kind, pcore, id));
        id as usize
    }

    fn add(&mut self, t: usize, s: i64, e: i64, code: u32, v: f64) {
        let e = e.max(s);
        let tr = &mut self.tracks[t];
        tr.info.rows += 1;
        tr.lo = tr.lo.min(s);
        tr.hi = tr.hi.max(e);
        tr.info.max_dur = tr.info.max_dur.max((e - s) as f64);
        if !v.is_nan() {
            tr.info.vmin = Some(tr.info.vmin.map_or(v, |m| m.min(v)));
            tr.info.vmax = Some(tr.info.vmax.map_or(v, |m| m.max(v)));
        }
        tr.grid.add(s, e, code, v);
    }

    /// Feeds one batch of table `def` (tables other than the module table's are ignored).
    pub fn add_batch(&mut self, def: &'static TableDef, b: &RecordBatch) {
        let n = b.num_rows();
        let i64c = |name: &str| -> Option<&arrow_array::Int64Array> {
            b.column_by_name(name)
                .and_then(|c| c.as_primitive_opt::<arrow_array::types::Int64Type>())
        };
        let get = |a: Option<&arrow_array::Int64Array>, i: usize| -> Option<i64> {
            a.filter(|a| a.is_valid(i)).map(|a| a.value(i))
        };
        let num = |name: &str| -> Option<ArrayRef> {
            b.column_by_name(name)
                .and_then(|c| arrow_cast_f64(c.as_ref()))
        };
        let numv = |a: &Option<ArrayRef>, i: usize| -> f64 {
            a.as_ref().filter(|a| a.is_valid(i)).map_or(f64::NAN, |a| {
                a.as_primitive::<arrow_array::types::Float64Type>().value(i)
            })
        };
        let strc = |name: &str| StrCol::by_name(b, name);
        fn sget<'b>(c: &Option<StrCol<'b>>, i: usize) -> &'b str {
            c.as_ref().and_then(|c| c.get(i)).unwrap_or("")
        }
        let pcore = i64c("pcore_idx");
        let pc = |i: usize| get(pcore, i).filter(|p| *p >= 0).unwrap_or(0);
        match def.name {
            "Instruction" | "DmaPacket" => {
                let dma = def.name == "DmaPacket";
                let (st, en) = (i64c("start_ts"), i64c("end_ts"));
                let key = strc(if dma { "queue_name" } else { "engine" });
                let dom = strc(if dma { "queue_type" } else { "opcode" });
                let kind = if dma {
                    TrackKind::Dma
                } else {
                    TrackKind::Engine
                };
                // Per dictionary key of this batch: the track last found for it (with its
                // pcore) and the dominant name's code, so most rows hash and compare no text.
                let mut key_track: Vec<Option<(i64, usize)>> = vec![None; dict_len(&key)];
                let mut dom_code: Vec<Option<u32>> = vec![None; dict_len(&dom)];
                let mut last: Option<(i64, &str, usize)> = None;
                for i in 0..n {
                    let Some(s) = get(st, i) else { continue };
                    let e = get(en, i).unwrap_or(s);
                    let p = pc(i);
                    let t = match dict_slot(&key, &mut key_track, i) {
                        Some(Some((kp, t))) if *kp == p => *t,
                        Some(slot) => {
                            let t = self.track(kind, def.name, p, sget(&key, i));
                            *slot = Some((p, t));
                            t
                        }
                        None => {
                            let k = sget(&key, i);
                            match last {
                                Some((lp, lk, t)) if lp == p && lk == k => t,
                                _ => {
                                    let t = self.track(kind, def.name, p, k);
                                    last = Some((p, k, t));
                                    t
                                }
                            }
                        }
                    };
                    let code_of = |lod: &mut Lod| {
                        let d = sget(&dom, i);
                        lod.name_code(if dma && d.is_empty() { "dma" } else { d })
                    };
                    let code = match dict_slot(&dom, &mut dom_code, i) {
                        Some(Some(c)) => *c,
                        Some(slot) => *slot.insert(code_of(self)),
                        None => code_of(self),
                    };
                    self.add(t, s, e, code, f64::NAN);
                }
            }
            "SemaphoreUpdate" | "PendingDma" => {
                let sem = def.name == "SemaphoreUpdate";
                let ts = i64c("timestamp");
                let id = strc("id");
                let val = num("value");
                let kind = if sem {
                    TrackKind::Semaphore
                } else {
                    TrackKind::Pending
                };
                // As above: the track of each dictionary key of the batch, found once per pcore.
                let mut key_track: Vec<Option<(i64, usize)>> = vec![None; dict_len(&id)];
                for i in 0..n {
                    let Some(s) = get(ts, i) else { continue };
                    let p = pc(i);
                    let t = match dict_slot(&id, &mut key_track, i).filter(|_| sem) {
                        Some(Some((kp, t))) if *kp == p => *t,
                        Some(slot) => {
                            let t = self.track(kind, def.name, p, sget(&id, i));
                            *slot = Some((p, t));
                            t
                        }
                        None => self.track(kind, def.name, p, if sem { sget(&id, i) } else { "" }),
                    };
                    self.add(t, s, s, u32::MAX, numv(&val, i));
                }
            }
            "Throttle" => {
                let ts = i64c("timestamp");
                let dur = i64c("duration");
                let (kc, nc) = (num("k"), num("n"));
                let ty = strc("type");
                for i in 0..n {
                    let Some(s) = get(ts, i) else { continue };
                    let e = get(dur, i).map_or(s, |d| s.saturating_add(d.max(0)));
                    let (k, m) = (numv(&kc, i), numv(&nc, i));
                    let tyv = match sget(&ty, i) {
                        "" => "throttle",
                        t => t,
                    };
                    let label = if k.is_finite() && m.is_finite() {
                        format!("{tyv} {k}/{m}")
                    } else {
                        tyv.to_string()
                    };
                    let code = self.name_code(&label);
                    let t = self.track(TrackKind::Throttle, def.name, pc(i), "");
                    self.add(t, s, e, code, f64::NAN);
                }
            }
            "SystemProfileEvents" => {
                let (st, en) = (i64c("start_ts"), i64c("end_ts"));
                let (src, name) = (strc("trace_event_source"), strc("name"));
                let (pid, tid, nc) = (i64c("process_id"), i64c("thread_id"), i64c("nc_idx"));
                // The track of each (source, pid, tid) — (source, core, None) for hardware rows —
                // met in this batch, so most rows format no track key and allocate nothing.
                let mut memo: FxHashMap<(&str, Option<i64>, Option<i64>), usize> =
                    FxHashMap::default();
                for i in 0..n {
                    let Some(s) = get(st, i) else { continue };
                    let e = get(en, i).unwrap_or(s);
                    let source = match sget(&src, i) {
                        "" => "neuron_rt",
                        x => x,
                    };
                    let hw = source == "neuron_hw";
                    let key = if hw {
                        (source, get(pcore, i).or(get(nc, i)), None)
                    } else {
                        (source, get(pid, i), get(tid, i))
                    };
                    if let Some(&t) = memo.get(&key) {
                        let code = self.name_code(sget(&name, i));
                        self.add(t, s, e, code, f64::NAN);
                        continue;
                    }
                    let t = if hw {
                        let core = get(pcore, i).or(get(nc, i));
                        let key = core.map_or("hw:?".to_string(), |c| format!("hw:{c}"));
                        self.track(TrackKind::System, def.name, core.unwrap_or(-1), &key)
                    } else {
                        let (p, th) = (get(pid, i), get(tid, i));
                        let f = |v: Option<i64>| v.map_or("?".to_string(), |v| v.to_string());
                        let key = format!("{source}:{}:{}", f(p), f(th));
                        let t = self.track(TrackKind::System, def.name, -1, &key);
                        let info = &mut self.tracks[t].info;
                        if info.source.is_none() {
                            info.source = Some(source.to_string());
                            info.pid = p;
                            info.tid = th;
                        }
                        t
                    };
                    if self.tracks[t].info.source.is_none() {
                        self.tracks[t].info.source = Some(source.to_string());
                    }
                    memo.insert(key, t);
                    let code = self.name_code(sget(&name, i));
                    self.add(t, s, e, code, f64::NAN);
                }
            }
            "CpuUsage" | "HostMemUsage" => {
                let cpu = def.name == "CpuUsage";
                let ts = i64c("timestamp");
                let id = strc("cpu_id");
                let val = num(if cpu { "util_percent" } else { "used_bytes" });
                for i in 0..n {
                    let Some(s) = get(ts, i) else { continue };
                    let (kind, key) = if cpu {
                        (TrackKind::Cpu, sget(&id, i))
                    } else {
                        (TrackKind::Hostmem, "")
                    };
                    let t = self.track(kind, def.name, -1, key);
                    self.add(t, s, s, u32::MAX, numv(&val, i));
                }
            }
            _ => {}
        }
    }

    /// Sets the axis origin (`Some`: that many table ns; `None`: the earliest time of any track,
    /// as the System timeline's axis) and fills each track's listed range.
    pub fn finish(&mut self, origin: Option<i64>) {
        let lo = self.tracks.iter().map(|t| t.lo).min().unwrap_or(0);
        self.origin = origin.unwrap_or(if lo == i64::MAX { 0 } else { lo });
        for t in &mut self.tracks {
            t.info.start = t.lo.saturating_sub(self.origin) as f64;
            t.info.end = t.hi.saturating_sub(self.origin) as f64;
            t.info.width = t.grid.width;
        }
    }

    /// Tracks, origin and names for the page.
    pub fn listing(&self) -> Listing<'_> {
        let (mut s, mut e) = (f64::INFINITY, f64::NEG_INFINITY);
        for t in &self.tracks {
            s = s.min(t.info.start);
            e = e.max(t.info.end);
        }
        if !s.is_finite() {
            (s, e) = (0.0, 1.0);
        }
        Listing {
            origin: self.origin.to_string(),
            start: s,
            end: e,
            names: &self.names,
            tracks: self.tracks.iter().map(|t| &t.info).collect(),
        }
    }

    /// Number of tracks.
    pub fn len(&self) -> usize {
        self.tracks.len()
    }

    /// No tracks.
    pub fn is_empty(&self) -> bool {
        self.tracks.is_empty()
    }

    /// Bytes of bucket state held (for the memory figures).
    pub fn heap_bytes(&self) -> usize {
        self.tracks
            .iter()
            .map(|t| t.grid.buckets.capacity() * std::mem::size_of::<Bucket>())
            .sum::<usize>()
            + self.names.iter().map(|n| n.len() + 24).sum::<usize>()
    }

    /// The buckets of `tracks` over `[t0, t1]` (ns from [`Lod::origin`]) at the coarsest level
    /// (finest width × 2^k) with at most `n` buckets in the window, packed as f64:
    /// per track `[id, width_ns, first_start_ns, m]` then `m` ×
    /// `[k, busy_ns, count, dom, vmin, vmax, last, carry]` ([`QUERY_FIELDS`]) for bucket 0 and
    /// every non-empty bucket `k` (its start: `first_start_ns + k × width_ns`; sparse, so hundreds
    /// of mostly idle semaphore tracks cost little): `dom` indexes [`Listing::names`] (-1: none),
    /// values NaN when none was set in the bucket, `carry` the last value set before the bucket
    /// (step functions: the value in force at its start).
    /// Unknown track ids are answered with `m = 0`. Cost: O(buckets of the track in the window),
    /// at most the track's cap.
    pub fn query(&self, tracks: &[u32], t0: f64, t1: f64, n: usize) -> Vec<f64> {
        let mut out = Vec::new();
        let n = n.clamp(1, 1 << 16) as f64;
        for &id in tracks {
            let Some(t) = self.tracks.get(id as usize) else {
                out.extend([f64::from(id), 1.0, 0.0, 0.0]);
                continue;
            };
            let g = &t.grid;
            let a = self.origin as f64 + t0.min(t1);
            let b = self.origin as f64 + t0.max(t1);
            let mut w = g.width;
            while (b - a) / (w as f64) > n && w < i64::MAX / 2 {
                w *= 2;
            }
            let ratio = w / g.width;
            let first = (a.floor() as i64).div_euclid(w);
            let last = (b.ceil() as i64).div_euclid(w);
            let m = (last - first + 1).max(0) as usize;
            out.extend([
                f64::from(id),
                w as f64,
                (first.saturating_mul(w) - self.origin) as f64,
                0.0,
            ]);
            let count_at = out.len() - 1;
            let mut acc = vec![Bucket::EMPTY; m];
            let mut carry = vec![f64::NAN; m];
            let mut value = f64::NAN;
            let mut slot = 0usize;
            for (i, bk) in g.buckets.iter().enumerate() {
                let j = (g.base + i as i64).div_euclid(ratio) - first;
                if j < 0 {
                    if !bk.last.is_nan() {
                        value = bk.last;
                    }
                    continue;
                }
                let j = j as usize;
                if j >= m {
                    break;
                }
                while slot <= j {
                    carry[slot] = value;
                    slot += 1;
                }
                acc[j].merge(bk);
                if !bk.last.is_nan() {
                    value = bk.last;
                }
            }
            while slot < m {
                carry[slot] = value;
                slot += 1;
            }
            let mut emitted = 0usize;
            for (k, (bk, c)) in acc.iter().zip(carry).enumerate() {
                if k > 0 && bk.count == 0 && bk.busy == 0.0 {
                    continue;
                }
                emitted += 1;
                out.extend([
                    k as f64,
                    bk.busy,
                    f64::from(bk.count),
                    if bk.dom == u32::MAX {
                        -1.0
                    } else {
                        f64::from(bk.dom)
                    },
                    bk.vmin,
                    bk.vmax,
                    bk.last,
                    c,
                ]);
            }
            out[count_at] = emitted as f64;
        }
        out
    }
}

/// `a.saturating_mul(b)`, without its overflow check when both fit in 32 bits (the check is a
/// 128-bit multiply, a library call on wasm32; this runs per bucket of every event).
#[inline]
fn mul_sat(a: i64, b: i64) -> i64 {
    if i64::from(a as i32) == a && i64::from(b as i32) == b {
        a * b
    } else {
        a.saturating_mul(b)
    }
}

/// Distinct values of a dictionary string column (0: plain or absent).
fn dict_len(c: &Option<StrCol<'_>>) -> usize {
    c.as_ref().map_or(0, StrCol::dict_len)
}

/// The entry of `memo` (indexed by dictionary key, [`dict_len`] long) for row `i` of `c`; `None`
/// when the row has no dictionary key (plain column, null row).
#[inline]
fn dict_slot<'m, T>(c: &Option<StrCol<'_>>, memo: &'m mut [T], i: usize) -> Option<&'m mut T> {
    c.as_ref()
        .and_then(|c| c.key(i))
        .and_then(|k| memo.get_mut(k))
}

/// A numeric column as Float64 (integers and floats), `None` for another type.
fn arrow_cast_f64(a: &dyn Array) -> Option<ArrayRef> {
    use arrow_array::types::*;
    use arrow_array::Float64Array;
    macro_rules! conv {
        ($t:ty) => {
            a.as_primitive_opt::<$t>().map(|p| {
                std::sync::Arc::new(
                    p.iter()
                        .map(|v| v.map(|v| v as f64))
                        .collect::<Float64Array>(),
                ) as ArrayRef
            })
        };
    }
    conv!(Int64Type)
        .or_else(|| conv!(Int32Type))
        .or_else(|| conv!(Int16Type))
        .or_else(|| conv!(Int8Type))
        .or_else(|| conv!(UInt64Type))
        .or_else(|| conv!(UInt32Type))
        .or_else(|| conv!(UInt16Type))
        .or_else(|| conv!(UInt8Type))
        .or_else(|| conv!(Float32Type))
        .or_else(|| conv!(Float64Type))
}

/// Forwards every batch to `inner` and feeds the timeline tables to [`Lod`].
pub struct LodCollector<'a> {
    /// Where the batches go.
    pub inner: &'a mut dyn TableSink,
    /// What was gathered.
    pub lod: Lod,
}

impl<'a> LodCollector<'a> {
    /// A collector in front of `inner`.
    pub fn new(inner: &'a mut dyn TableSink) -> Self {
        LodCollector {
            inner,
            lod: Lod::default(),
        }
    }
}

impl TableSink for LodCollector<'_> {
    fn batch(&mut self, def: &'static TableDef, batch: RecordBatch) -> Result<()> {
        self.lod.add_batch(def, &batch);
        self.inner.batch(def, batch)
    }
}

/// How a table's rows map to time intervals for [`window_rows`].
#[derive(Debug, Clone, Copy)]
pub struct TimeCols<'a> {
    /// Start (or instant) column, int64 ns.
    pub start: &'a str,
    /// End column, int64 ns (`None`: see `duration`, else the row is an instant).
    pub end: Option<&'a str>,
    /// Duration column, int64 ns, added to the start when there is no end column.
    pub duration: Option<&'a str>,
}

impl TimeCols<'static> {
    /// The time columns of a timeline table (the module table), `None` for another table.
    pub fn of(table: &str) -> Option<TimeCols<'static>> {
        let span = |s, e| TimeCols {
            start: s,
            end: Some(e),
            duration: None,
        };
        let instant = |s| TimeCols {
            start: s,
            end: None,
            duration: None,
        };
        Some(match table {
            "Instruction" | "DmaPacket" | "SystemProfileEvents" => span("start_ts", "end_ts"),
            "Throttle" => TimeCols {
                start: "timestamp",
                end: None,
                duration: Some("duration"),
            },
            "SemaphoreUpdate" | "PendingDma" | "CpuUsage" | "HostMemUsage" => instant("timestamp"),
            _ => return None,
        })
    }
}

/// What [`window_rows`] found.
#[derive(Debug)]
pub struct Window {
    /// The rows (the asked columns present in the table, then `nscope_row`: the row's index in
    /// the table, uint64), in table order; empty when `over_limit`.
    pub batches: Vec<RecordBatch>,
    /// Schema of `batches`.
    pub schema: arrow_schema::SchemaRef,
    /// Rows overlapping the window (exact when not `over_limit`, else the count when the limit was
    /// passed and the reading stopped).
    pub rows: u64,
    /// More than `limit` rows overlap the window: nothing is returned, draw from the summaries.
    pub over_limit: bool,
    /// Row groups read and skipped on their statistics.
    pub groups_read: usize,
    pub groups_skipped: usize,
}

/// Column `name`'s int64 min/max statistics in row group `rg` (`None` when missing).
fn stat_range(
    md: &parquet::file::metadata::RowGroupMetaData,
    col: Option<usize>,
) -> Option<(i64, i64)> {
    use parquet::file::statistics::Statistics;
    match md.column(col?).statistics()? {
        Statistics::Int64(v) => Some((*v.min_opt()?, *v.max_opt()?)),
        Statistics::Int32(v) => Some((i64::from(*v.min_opt()?), i64::from(*v.max_opt()?))),
        _ => None,
    }
}

/// Rows of the Parquet table `reader` whose interval (per `time`) overlaps `[t0, t1]` (table
/// ns, inclusive), only `columns` (names absent from the table are skipped; the time columns
/// are read for the test but returned only when asked). A row group is skipped when its start
/// column's minimum is past `t1` or its end (start maximum + duration maximum) is before `t0`;
/// a row group without statistics is read. At most `limit` rows are kept: past it the read
/// stops and [`Window::over_limit`] is set. Rows whose start is null are never in a window.
///
/// Errors: the file is not Parquet, a time column is missing or not int64, a read fails.
pub fn window_rows<R: parquet::file::reader::ChunkReader + 'static>(
    reader: R,
    time: TimeCols<'_>,
    columns: &[String],
    t0: i64,
    t1: i64,
    limit: usize,
) -> Result<Window> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ProjectionMask;
    let b = ParquetRecordBatchReaderBuilder::try_new(reader)?;
    let schema = b.schema().clone();
    let md = b.metadata().clone();
    let pq = b.parquet_schema();
    let leaf = |name: &str| pq.columns().iter().position(|c| c.path().string() == name);
    let need = |name: &str| -> Result<usize> {
        schema
            .index_of(name)
            .map_err(|_| Error::Other(format!("window: the table has no time column {name}")))
    };
    let s_idx = need(time.start)?;
    let e_idx = time.end.map(need).transpose()?;
    let d_idx = time.duration.map(need).transpose()?;
    let (s_leaf, e_leaf, d_leaf) = (
        leaf(time.start),
        time.end.and_then(leaf),
        time.duration.and_then(leaf),
    );
    let mut keep = Vec::new();
    let mut offsets = Vec::new();
    let mut skipped = 0usize;
    let mut at = 0u64;
    for (i, rg) in md.row_groups().iter().enumerate() {
        let first = at;
        at += rg.num_rows().max(0) as u64;
        let s = stat_range(rg, s_leaf);
        let reach = match (e_idx, d_idx) {
            (Some(_), _) => stat_range(rg, e_leaf).map(|r| r.1),
            (None, Some(_)) => match (s, stat_range(rg, d_leaf)) {
                (Some(s), Some(d)) => Some(s.1.saturating_add(d.1.max(0))),
                _ => None,
            },
            (None, None) => s.map(|r| r.1),
        };
        let out = matches!(s, Some((lo, _)) if lo > t1) || matches!(reach, Some(hi) if hi < t0);
        if out {
            skipped += 1;
        } else {
            keep.push(i);
            offsets.push(first);
        }
    }
    // Projection: the asked columns plus the time columns (dropped again unless asked).
    let mut roots: Vec<usize> = columns
        .iter()
        .filter_map(|c| schema.index_of(c).ok())
        .collect();
    let projected = roots.clone();
    for i in [Some(s_idx), e_idx, d_idx].into_iter().flatten() {
        if !roots.contains(&i) {
            roots.push(i);
        }
    }
    roots.sort_unstable();
    let mask = ProjectionMask::roots(pq, roots.iter().copied());
    let mut out_fields: Vec<arrow_schema::FieldRef> = roots
        .iter()
        .filter(|i| projected.contains(i))
        .map(|&i| schema.fields()[i].clone())
        .collect();
    out_fields.push(std::sync::Arc::new(arrow_schema::Field::new(
        "nscope_row",
        arrow_schema::DataType::UInt64,
        false,
    )));
    let out_schema = std::sync::Arc::new(arrow_schema::Schema::new_with_metadata(
        out_fields,
        schema.metadata().clone(),
    ));
    let mut win = Window {
        batches: Vec::new(),
        schema: out_schema.clone(),
        rows: 0,
        over_limit: false,
        groups_read: keep.len(),
        groups_skipped: skipped,
    };
    if keep.is_empty() {
        return Ok(win);
    }
    // Kept rows arrive as the concatenation of the kept row groups (a batch may span two):
    // `starts[g]` is where group g begins in that stream, `offsets[g]` its first table row.
    let mut starts = Vec::with_capacity(keep.len());
    let mut acc = 0u64;
    for &g in &keep {
        starts.push(acc);
        acc += md.row_group(g).num_rows().max(0) as u64;
    }
    let reader = b
        .with_row_groups(keep)
        .with_projection(mask)
        .with_batch_size(crate::tables::BATCH_ROWS)
        .build()?;
    let pos_of = |name: &str| roots.iter().position(|&r| schema.field(r).name() == name);
    let (s_pos, e_pos, d_pos) = (
        pos_of(time.start),
        time.end.and_then(pos_of),
        time.duration.and_then(pos_of),
    );
    let keep_cols: Vec<usize> = roots
        .iter()
        .enumerate()
        .filter(|(_, r)| projected.contains(r))
        .map(|(i, _)| i)
        .collect();
    let int = |b: &RecordBatch, p: Option<usize>| -> Result<Option<arrow_array::Int64Array>> {
        let Some(p) = p else { return Ok(None) };
        let c = b.column(p);
        match c.as_primitive_opt::<arrow_array::types::Int64Type>() {
            Some(a) => Ok(Some(a.clone())),
            None => Err(Error::Other(format!(
                "window: time column {} is {} (expected int64)",
                b.schema().field(p).name(),
                c.data_type()
            ))),
        }
    };
    let mut stream_at = 0u64;
    let mut g = 0usize;
    for batch in reader {
        let batch = batch?;
        let n = batch.num_rows();
        let s = int(&batch, s_pos)?.ok_or_else(|| Error::Other("window: no start".into()))?;
        let e = int(&batch, e_pos)?;
        let d = int(&batch, d_pos)?;
        let mut mask = arrow_array::builder::BooleanBuilder::with_capacity(n);
        let mut rows = arrow_array::builder::UInt64Builder::new();
        for i in 0..n {
            let p = stream_at + i as u64;
            while g + 1 < starts.len() && starts[g + 1] <= p {
                g += 1;
            }
            let hit = s.is_valid(i) && {
                let a = s.value(i);
                let z = match (&e, &d) {
                    (Some(e), _) if e.is_valid(i) => e.value(i).max(a),
                    (None, Some(d)) if d.is_valid(i) => a.saturating_add(d.value(i).max(0)),
                    _ => a,
                };
                a <= t1 && z >= t0
            };
            mask.append_value(hit);
            if hit {
                rows.append_value(offsets[g] + (p - starts[g]));
            }
        }
        stream_at += n as u64;
        let mask = mask.finish();
        let rows = rows.finish();
        let hits = rows.len();
        if hits == 0 {
            continue;
        }
        win.rows += hits as u64;
        if win.rows > limit as u64 {
            win.over_limit = true;
            win.batches.clear();
            return Ok(win);
        }
        let mut cols: Vec<ArrayRef> = keep_cols
            .iter()
            .map(|&c| arrow_select::filter::filter(batch.column(c), &mask))
            .collect::<std::result::Result<_, _>>()?;
        cols.push(std::sync::Arc::new(rows));
        win.batches
            .push(RecordBatch::try_new(out_schema.clone(), cols)?);
    }
    Ok(win)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_is_div_euclid() {
        let ts = [
            i64::MIN,
            i64::MIN + 1,
            -1_000_000_007,
            -129,
            -128,
            -1,
            0,
            1,
            127,
            128,
            999,
            i64::MAX,
        ];
        for w in [1, 2, 64, 1 << 40, 1 << 62, i64::MAX, 3, 1000] {
            let g = Grid {
                width: w,
                ..Grid::new(8)
            };
            for t in ts {
                assert_eq!(g.index(t), t.div_euclid(w), "{t} / {w}");
            }
        }
    }

    #[test]
    fn mul_sat_saturates_like_i64() {
        let m = i64::from(i32::MAX);
        for (a, b) in [
            (0, 0),
            (3, -7),
            (m, m),
            (-m - 1, m),
            (m + 1, m),
            (i64::MAX, 2),
            (i64::MIN, 2),
            (-(1 << 40), 1 << 30),
        ] {
            assert_eq!(mul_sat(a, b), a.saturating_mul(b), "{a} × {b}");
        }
    }

    #[test]
    fn grid_doubles_and_keeps_totals() {
        let mut g = Grid::new(8);
        for k in 0..100i64 {
            g.add(k * 10, k * 10 + 5, (k % 3) as u32, f64::NAN);
        }
        assert!(g.buckets.len() <= 8);
        let busy: f64 = g.buckets.iter().map(|b| b.busy).sum();
        let count: u32 = g.buckets.iter().map(|b| b.count).sum();
        assert_eq!(busy, 500.0);
        assert_eq!(count, 100);
        assert_eq!(g.width, 128, "1000 ns over at most 8 buckets");
    }
}

/// A track as [`Lod::to_bytes`] hands it to another worker.
#[derive(Serialize, serde::Deserialize)]
struct WireTrack {
    kind: TrackKind,
    table: String,
    pcore: i64,
    name: String,
    source: Option<String>,
    pid: Option<i64>,
    tid: Option<i64>,
    rows: u64,
    max_dur: f64,
    vmin: Option<f64>,
    vmax: Option<f64>,
    lo: i64,
    hi: i64,
    width: i64,
    base: i64,
    cap: u64,
    /// `dom` codes index `WireLod::names`.
    buckets: Vec<Bucket>,
}

#[derive(Serialize, serde::Deserialize)]
struct WireLod {
    names: Vec<String>,
    tracks: Vec<WireTrack>,
}

impl Lod {
    /// The tracks and names gathered so far (before [`Lod::finish`]) as bytes (postcard) for
    /// [`Lod::absorb`] in another worker: the page's split decode builds the `DmaPacket` tracks
    /// in the worker that writes those rows. Size: the buckets, ≤ 4 Ki per DMA queue track.
    pub fn to_bytes(&self) -> Vec<u8> {
        let tracks = self
            .tracks
            .iter()
            .map(|t| WireTrack {
                kind: t.info.kind,
                table: t.info.table.to_string(),
                pcore: t.info.pcore,
                name: t.info.name.clone(),
                source: t.info.source.clone(),
                pid: t.info.pid,
                tid: t.info.tid,
                rows: t.info.rows,
                max_dur: t.info.max_dur,
                vmin: t.info.vmin,
                vmax: t.info.vmax,
                lo: t.lo,
                hi: t.hi,
                width: t.grid.width,
                base: t.grid.base,
                cap: t.grid.cap as u64,
                buckets: t.grid.buckets.clone(),
            })
            .collect();
        let wire = WireLod {
            names: self.names.clone(),
            tracks,
        };
        postcard::to_allocvec(&wire).unwrap_or_default()
    }

    /// Adds the tracks of `bytes` ([`Lod::to_bytes`] of another worker's summaries of other
    /// tables), their dominant names re-coded into this dictionary. Each track keeps its buckets
    /// exactly, so the result equals one collector fed every batch, up to the order of the
    /// tracks (`end_to_end::split_decode_equals_one_thread`).
    ///
    /// Errors: bytes that are not [`Lod::to_bytes`] output, an unknown table, or a track this
    /// summary already has (nothing is added then).
    pub fn absorb(&mut self, bytes: &[u8]) -> crate::error::Result<()> {
        use crate::error::Error;
        let wire: WireLod = postcard::from_bytes(bytes)
            .map_err(|e| Error::Other(format!("level-of-detail summaries: {e}")))?;
        let mut tables = Vec::with_capacity(wire.tracks.len());
        for t in &wire.tracks {
            let def = crate::tables::table_def(&t.table).ok_or_else(|| {
                Error::Other(format!(
                    "level-of-detail summaries: unknown table {}",
                    t.table
                ))
            })?;
            let known = self
                .index
                .get(t.name.as_str())
                .is_some_and(|v| v.iter().any(|&(k, p, _)| k == t.kind && p == t.pcore));
            if known {
                return Err(Error::Other(format!(
                    "level-of-detail summaries: track {} {} of core {} twice",
                    t.table, t.name, t.pcore
                )));
            }
            tables.push(def.name);
        }
        for (t, table) in wire.tracks.into_iter().zip(tables) {
            let i = self.track(t.kind, table, t.pcore, &t.name);
            let mut buckets = t.buckets;
            for b in &mut buckets {
                if let Some(n) = wire.names.get(b.dom as usize) {
                    b.dom = self.name_code(n);
                }
            }
            let tr = &mut self.tracks[i];
            tr.info.source = t.source;
            tr.info.pid = t.pid;
            tr.info.tid = t.tid;
            tr.info.rows = t.rows;
            tr.info.max_dur = t.max_dur;
            tr.info.vmin = t.vmin;
            tr.info.vmax = t.vmax;
            tr.lo = t.lo;
            tr.hi = t.hi;
            tr.grid = Grid {
                width: t.width,
                base: t.base,
                cap: t.cap as usize,
                buckets,
            };
        }
        Ok(())
    }
}
