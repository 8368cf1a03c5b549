//! User source code for the Code Viewer (spec/framework-inputs.md §4): single files, folders and
//! `.tar.gz` archives (Explorer stores uploads as `source_folder.tar.gz`), indexed as
//! path → text with a lookup by path suffix, so a debug-info path recorded on another machine
//! (`/home/ubuntu/nki-moe/kernels/x.py`, `nki_source_location`) finds the uploaded `kernels/x.py`.
//!
//! Archives are streamed: `RangeReader` (1 MiB chunks) → `flate2` gunzip → `tar` entries, one
//! entry in memory at a time. Only regular files that look like text (no NUL byte, at most
//! [`SourceLimits::max_file_bytes`]) are kept; symlinks, devices and directories are ignored.

use std::collections::HashMap;
use std::io::Read;

use crate::error::{Error, Result};
use crate::neff::archive::InflateLimit;
use crate::source::{ByteSource, RangeReader};

/// A source `.tar.gz` may inflate to at most this many times its size (source text compresses
/// 3–10×), or [`SOURCE_INFLATE_FLOOR`] bytes if larger, and never past [`SOURCE_INFLATE_MAX`];
/// past it the archive stops with an error (a decompression bomb), files before it kept.
pub const SOURCE_INFLATE_RATIO: u64 = 100;
/// Uncompressed bytes always allowed for a source archive.
pub const SOURCE_INFLATE_FLOOR: u64 = 64 << 20;
/// Absolute cap on a source archive's uncompressed size (bytes).
pub const SOURCE_INFLATE_MAX: u64 = 4 << 30;

/// Caps for what the index keeps.
#[derive(Debug, Clone, Copy)]
pub struct SourceLimits {
    /// Largest single file kept (bytes); larger files are skipped.
    pub max_file_bytes: u64,
    /// Total text kept (bytes); files past it are skipped.
    pub max_total_bytes: u64,
}

impl Default for SourceLimits {
    /// 4 MiB per file, 256 MiB in total.
    fn default() -> Self {
        SourceLimits {
            max_file_bytes: 4 << 20,
            max_total_bytes: 256 << 20,
        }
    }
}

/// One source file: its normalised relative path and text.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceFile {
    /// `/`-separated path without a leading `/` or `./`, as uploaded.
    pub path: String,
    /// UTF-8 text (invalid bytes replaced by U+FFFD).
    pub text: String,
}

/// What one `add_*` call did. Files added before a fault stay in the index.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SourceLoad {
    pub added: u64,
    /// Files skipped as binary (a NUL byte).
    pub skipped_binary: u64,
    /// Files skipped for size (per-file or total cap).
    pub skipped_large: u64,
    /// Non-regular entries ignored (directories, symlinks, devices).
    pub skipped_other: u64,
    /// The fault that stopped reading an archive, as text.
    pub error: Option<String>,
}

/// Path → text index with suffix lookup.
#[derive(Debug, Default)]
pub struct SourceIndex {
    files: Vec<SourceFile>,
    by_path: HashMap<String, usize>,
    by_name: HashMap<String, Vec<usize>>,
    total: u64,
    limits: SourceLimits,
}

/// Normalises a path: `\` → `/`, drops empty and `.` components and a leading `/`.
pub fn normalize(path: &str) -> String {
    components(path).collect::<Vec<_>>().join("/")
}

fn components(path: &str) -> impl DoubleEndedIterator<Item = &str> {
    path.split(['/', '\\'])
        .filter(|c| !c.is_empty() && *c != ".")
}

impl SourceIndex {
    /// An empty index with default limits.
    pub fn new() -> Self {
        Self::default()
    }
    /// An empty index with `limits`.
    pub fn with_limits(limits: SourceLimits) -> Self {
        SourceIndex {
            limits,
            ..Self::default()
        }
    }
    /// Number of files.
    pub fn len(&self) -> usize {
        self.files.len()
    }
    /// True when no file is indexed.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
    /// All files in insertion order.
    pub fn files(&self) -> &[SourceFile] {
        &self.files
    }
    /// The file at exactly this (normalised) path.
    pub fn get(&self, path: &str) -> Option<&SourceFile> {
        self.by_path
            .get(&normalize(path))
            .and_then(|&i| self.files.get(i))
    }

    /// Adds one file's bytes under `path` (a later file with the same path replaces it).
    pub fn add_bytes(&mut self, path: &str, bytes: &[u8], load: &mut SourceLoad) {
        let path = normalize(path);
        let Some(name) = path.rsplit('/').next().filter(|n| !n.is_empty()) else {
            load.skipped_other += 1;
            return;
        };
        if bytes.len() as u64 > self.limits.max_file_bytes
            || self.total + bytes.len() as u64 > self.limits.max_total_bytes
        {
            load.skipped_large += 1;
            return;
        }
        if bytes.contains(&0) {
            load.skipped_binary += 1;
            return;
        }
        let name = name.to_string();
        let file = SourceFile {
            path: path.clone(),
            text: String::from_utf8_lossy(bytes).into_owned(),
        };
        self.total += bytes.len() as u64;
        load.added += 1;
        if let Some(&i) = self.by_path.get(&path) {
            if let Some(f) = self.files.get_mut(i) {
                *f = file;
            }
            return;
        }
        let i = self.files.len();
        self.files.push(file);
        self.by_path.insert(path, i);
        self.by_name.entry(name).or_default().push(i);
    }

    /// Adds a single file read from `src` (e.g. a picked `.py`).
    pub fn add_file(&mut self, path: &str, src: &dyn ByteSource) -> SourceLoad {
        let mut load = SourceLoad::default();
        if src.len() > self.limits.max_file_bytes {
            load.skipped_large += 1;
            return load;
        }
        match src.read_vec(0, src.len() as usize) {
            Ok(b) => self.add_bytes(path, &b, &mut load),
            Err(e) => load.error = Some(format!("{path}: {e}")),
        }
        load
    }

    /// Adds every text file of a `.tar.gz` (or plain `.tar` when `gzip` is false) read from
    /// `src`, under `prefix` (may be empty). Streams the archive; entries past a fault are lost,
    /// entries before it are kept and the fault is in [`SourceLoad::error`].
    pub fn add_tar(&mut self, src: &dyn ByteSource, gzip: bool, prefix: &str) -> SourceLoad {
        let mut load = SourceLoad::default();
        let raw = RangeReader::new(src, 0, src.len(), 1 << 20);
        let r = if gzip {
            let gz = InflateLimit::new(
                flate2::read::GzDecoder::new(raw),
                src.len(),
                SOURCE_INFLATE_RATIO,
                SOURCE_INFLATE_FLOOR,
                SOURCE_INFLATE_MAX,
            );
            self.read_tar(gz, prefix, &mut load)
        } else {
            self.read_tar(raw, prefix, &mut load)
        };
        if let Err(e) = r {
            load.error = Some(e.to_string());
        }
        load
    }

    fn read_tar(&mut self, r: impl Read, prefix: &str, load: &mut SourceLoad) -> Result<()> {
        let mut ar = tar::Archive::new(r);
        let entries = ar
            .entries()
            .map_err(|e| Error::Other(format!("tar: {e}")))?;
        let mut buf = Vec::new();
        for entry in entries {
            let mut entry = entry.map_err(|e| Error::Other(format!("tar: {e}")))?;
            let ty = entry.header().entry_type();
            if !ty.is_file() {
                load.skipped_other += 1;
                continue;
            }
            let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            let size = entry.size();
            if size > self.limits.max_file_bytes {
                load.skipped_large += 1;
                continue; // the tar reader skips the unread data itself
            }
            buf.clear();
            entry
                .read_to_end(&mut buf)
                .map_err(|e| Error::Other(format!("tar entry {path}: {e}")))?;
            let full = if prefix.is_empty() {
                path
            } else {
                format!("{prefix}/{path}")
            };
            self.add_bytes(&full, &buf, load);
        }
        Ok(())
    }

    /// Adds every file under a native folder, with paths relative to `dir`'s parent (as the
    /// browser's `webkitRelativePath` gives them).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn add_dir(&mut self, dir: &std::path::Path) -> SourceLoad {
        let mut load = SourceLoad::default();
        let base = dir.parent().unwrap_or(dir).to_path_buf();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            let rd = match std::fs::read_dir(&d) {
                Ok(rd) => rd,
                Err(e) => {
                    load.error = Some(format!("{}: {e}", d.display()));
                    continue;
                }
            };
            let mut items: Vec<_> = rd.filter_map(|e| e.ok()).collect();
            items.sort_by_key(|e| e.file_name());
            for e in items {
                let p = e.path();
                let Ok(ft) = e.file_type() else { continue };
                if ft.is_dir() {
                    todo.push(p);
                } else if ft.is_file() {
                    let rel = p.strip_prefix(&base).unwrap_or(&p).to_string_lossy();
                    match std::fs::metadata(&p) {
                        Ok(m) if m.len() > self.limits.max_file_bytes => load.skipped_large += 1,
                        _ => match std::fs::read(&p) {
                            Ok(b) => self.add_bytes(&rel, &b, &mut load),
                            Err(err) => load.error = Some(format!("{}: {err}", p.display())),
                        },
                    }
                } else {
                    load.skipped_other += 1;
                }
            }
        }
        load
    }

    /// Files matching a debug-info path from any machine: those sharing the longest common
    /// suffix of path components with it (at least the file name). Several on a tie (the viewer
    /// then lets the user pick, as Explorer does); empty when no file name matches.
    pub fn lookup(&self, debug_path: &str) -> Vec<&SourceFile> {
        let want: Vec<&str> = components(debug_path).rev().collect();
        let Some(name) = want.first() else {
            return Vec::new();
        };
        let Some(cands) = self.by_name.get(*name) else {
            return Vec::new();
        };
        let mut best = 0usize;
        let mut out: Vec<&SourceFile> = Vec::new();
        for &i in cands {
            let Some(f) = self.files.get(i) else { continue };
            let n = components(&f.path)
                .rev()
                .zip(&want)
                .take_while(|(a, b)| a == *b)
                .count();
            if n > best {
                best = n;
                out.clear();
            }
            if n == best {
                out.push(f);
            }
        }
        out
    }
}

/// What loading one picked input (a `.py`, a `.tar.gz`) into the index did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct InputLoad {
    /// The picked path.
    pub file: String,
    #[serde(flatten)]
    pub load: SourceLoad,
}

/// One indexed file for a file list.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SourceFileInfo {
    /// Indexed path (an archive's members sit under the archive's own path).
    pub path: String,
    /// Text length, bytes.
    pub bytes: u64,
    /// Lines (a last line without `\n` counts).
    pub lines: u64,
}

impl SourceIndex {
    /// Adds a picked input by its name: `*.tar.gz` / `*.tgz` (gzip) and `*.tar` are read as
    /// archives whose members go under `path`; anything else as one text file.
    pub fn add_input(&mut self, path: &str, src: &dyn ByteSource) -> InputLoad {
        let lower = path.to_ascii_lowercase();
        let load = if lower.ends_with(".tar.gz") || lower.ends_with(".tgz") {
            self.add_tar(src, true, path)
        } else if lower.ends_with(".tar") {
            self.add_tar(src, false, path)
        } else {
            self.add_file(path, src)
        };
        InputLoad {
            file: path.to_string(),
            load,
        }
    }

    /// Every indexed file with its size and line count, in insertion order.
    pub fn listing(&self) -> Vec<SourceFileInfo> {
        self.files
            .iter()
            .map(|f| SourceFileInfo {
                path: f.path.clone(),
                bytes: f.text.len() as u64,
                lines: f.text.lines().count() as u64,
            })
            .collect()
    }
}

/// Splits a debug-info location `path:line` (Instruction `nki_source_location`,
/// `bir_debug_info_source_location`) at its last `:` into the path and the 1-based line. The
/// schema says "file:line(s)": for a range or list (`x.py:12-14`, `x.py:12,15`) the first line is
/// taken (every KevGomes sample location is a single line). `None` when no positive decimal line
/// follows the last `:`.
pub fn split_location(loc: &str) -> Option<(&str, u32)> {
    let (path, rest) = loc.trim().rsplit_once(':')?;
    let rest = rest.trim();
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (num, tail) = rest.split_at(digits);
    if !(tail.is_empty() || tail.starts_with(['-', ','])) {
        return None;
    }
    let line: u32 = num.parse().ok()?;
    (line > 0 && !path.is_empty()).then_some((path, line))
}

/// Where a debug-info location lands among the indexed files.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Resolved {
    /// The location as given (`path:line`).
    pub location: String,
    /// Its path part, as recorded on the compile host.
    pub debug_path: String,
    /// Its 1-based line (0 when the location has no line).
    pub line: u32,
    /// Indexed paths sharing the longest suffix with `debug_path` (empty: not picked; several: a tie).
    pub files: Vec<String>,
}

impl SourceIndex {
    /// Resolves a location `path:line` (or a bare path) to the indexed files it may name.
    pub fn resolve(&self, location: &str) -> Resolved {
        let (path, line) = split_location(location).unwrap_or((location.trim(), 0));
        Resolved {
            location: location.to_string(),
            debug_path: path.to_string(),
            line,
            files: self
                .lookup(path)
                .into_iter()
                .map(|f| f.path.clone())
                .collect(),
        }
    }
}

/// Device time of one engine at one source location.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EngineHeat {
    /// Explorer engine name (`tensor`, `vector`, `scalar`, `gpsimd`, `sync`, …).
    pub engine: String,
    /// Sum of instruction durations, ns.
    pub total_ns: i64,
    /// Instructions.
    pub count: u64,
}

/// Device time attributed to one source location (all instructions whose `nki_source_location`,
/// else `bir_debug_info_source_location`, is `location`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LineHeat {
    /// `path:line` as recorded.
    pub location: String,
    /// Path part (compile-host path).
    pub path: String,
    /// 1-based line (0 when the location carries none).
    pub line: u32,
    /// Sum of instruction durations, ns (engines run in parallel, so sums can exceed wall time).
    pub total_ns: i64,
    /// Instructions.
    pub count: u64,
    /// Per engine, largest `total_ns` first.
    pub engines: Vec<EngineHeat>,
}

/// Per-location heat of a device profile's `Instruction` table.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SourceHeat {
    /// Sum of every instruction's duration, ns (the denominator of a line's share).
    pub total_ns: i64,
    /// Every instruction.
    pub count: u64,
    /// Duration and count of instructions without a source location.
    pub unattributed_ns: i64,
    pub unattributed_count: u64,
    /// One entry per distinct location, largest `total_ns` first.
    pub lines: Vec<LineHeat>,
}

/// Accumulates [`SourceHeat`] from `Instruction` record batches (columns `nki_source_location`,
/// `bir_debug_info_source_location`, `duration_ns`, `engine`; `start_ts`/`end_ts` stand in for a
/// null `duration_ns`). Missing columns count as null. Memory: one entry per distinct
/// (location, engine), not per row. Dictionary columns are resolved once per dictionary value
/// and batch, so a row costs no hashing (the page builds the heat while the NTFF decodes:
/// crate/src/wasm.rs `HeatSink`).
#[derive(Debug, Default)]
pub struct HeatBuilder {
    heat: SourceHeat,
    /// Location → its index in `sums`.
    by_loc: HashMap<String, u32>,
    /// Per location: (ns, count, per engine id (ns, count)).
    sums: Vec<LocSums>,
    /// Engine names by id (a handful).
    engines: Vec<String>,
}

/// (location, ns, count) of one location, and per engine id.
type LocSums = (String, i64, u64, Vec<(u32, i64, u64)>);

/// The Instruction columns [`HeatBuilder::add_batch`] reads.
pub const HEAT_COLUMNS: [&str; 6] = [
    "nki_source_location",
    "bir_debug_info_source_location",
    "duration_ns",
    "start_ts",
    "end_ts",
    "engine",
];

/// Memo of one string column's ids within a batch: per dictionary key (`u32::MAX`: not yet
/// resolved, `u32::MAX - 1`: null or empty).
struct KeyMemo(Vec<u32>);

const UNSEEN: u32 = u32::MAX;
const NONE: u32 = u32::MAX - 1;

impl HeatBuilder {
    fn loc_id(&mut self, loc: &str) -> u32 {
        if let Some(&i) = self.by_loc.get(loc) {
            return i;
        }
        let i = self.sums.len() as u32;
        self.sums.push((loc.to_string(), 0, 0, Vec::new()));
        self.by_loc.insert(loc.to_string(), i);
        i
    }
    fn engine_id(&mut self, e: &str) -> u32 {
        match self.engines.iter().position(|x| x == e) {
            Some(i) => i as u32,
            None => {
                self.engines.push(e.to_string());
                (self.engines.len() - 1) as u32
            }
        }
    }
    /// The id of row `r`'s value in `col` through `memo` (dictionary columns) or `id` (NONE for
    /// null or empty).
    fn id_at(
        &mut self,
        col: Option<crate::tables::StrCol<'_>>,
        memo: &mut KeyMemo,
        r: usize,
        id: fn(&mut Self, &str) -> u32,
    ) -> u32 {
        use crate::tables::StrCol;
        use arrow_array::Array;
        match col {
            None => NONE,
            Some(StrCol::Dict(keys, values)) => {
                if keys.is_null(r) {
                    return NONE;
                }
                let k = keys.value(r);
                let Some(slot) = usize::try_from(k).ok().filter(|&k| k < values.len()) else {
                    return NONE;
                };
                if memo.0.len() < values.len() {
                    memo.0.resize(values.len(), UNSEEN);
                }
                if memo.0[slot] == UNSEEN {
                    let v = values.is_valid(slot).then(|| values.value(slot));
                    memo.0[slot] = match v.filter(|v| !v.is_empty()) {
                        Some(v) => id(self, v),
                        None => NONE,
                    };
                }
                memo.0[slot]
            }
            Some(c) => match c.get(r).filter(|v| !v.is_empty()) {
                Some(v) => id(self, v),
                None => NONE,
            },
        }
    }

    /// Adds one batch of `Instruction` rows.
    pub fn add_batch(&mut self, b: &arrow_array::RecordBatch) {
        use crate::tables::StrCol;
        use arrow_array::{Array, Int64Array};
        let s = |n: &str| StrCol::by_name(b, n);
        let i = |n: &str| {
            b.column_by_name(n)
                .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
        };
        let (nki, bir, eng) = (
            s("nki_source_location"),
            s("bir_debug_info_source_location"),
            s("engine"),
        );
        let (dur, st, en) = (i("duration_ns"), i("start_ts"), i("end_ts"));
        fn get_i(a: Option<&Int64Array>, r: usize) -> Option<i64> {
            a.filter(|a| a.is_valid(r)).map(|a| a.value(r))
        }
        let (mut m_nki, mut m_bir, mut m_eng) = (
            KeyMemo(Vec::new()),
            KeyMemo(Vec::new()),
            KeyMemo(Vec::new()),
        );
        for r in 0..b.num_rows() {
            let d = get_i(dur, r)
                .or_else(|| Some(get_i(en, r)?.saturating_sub(get_i(st, r)?)))
                .unwrap_or(0)
                .max(0);
            self.heat.total_ns = self.heat.total_ns.saturating_add(d);
            self.heat.count += 1;
            let mut loc = self.id_at(nki, &mut m_nki, r, Self::loc_id);
            if loc == NONE {
                loc = self.id_at(bir, &mut m_bir, r, Self::loc_id);
            }
            if loc == NONE {
                self.heat.unattributed_ns = self.heat.unattributed_ns.saturating_add(d);
                self.heat.unattributed_count += 1;
                continue;
            }
            // A missing or empty engine is the engine "" (as before).
            let mut engine = self.id_at(eng, &mut m_eng, r, Self::engine_id);
            if engine == NONE {
                engine = self.engine_id("");
            }
            let e = &mut self.sums[loc as usize];
            e.1 = e.1.saturating_add(d);
            e.2 += 1;
            match e.3.iter_mut().find(|x| x.0 == engine) {
                Some(pe) => {
                    pe.1 = pe.1.saturating_add(d);
                    pe.2 += 1;
                }
                None => e.3.push((engine, d, 1)),
            }
        }
    }

    /// The heat, lines and engines sorted by time (largest first; ties by location / engine).
    pub fn finish(self) -> SourceHeat {
        let mut heat = self.heat;
        let names = self.engines;
        heat.lines = self
            .sums
            .into_iter()
            .map(|(location, total_ns, count, engines)| {
                let (path, line) = split_location(&location).unwrap_or((location.as_str(), 0));
                let mut engines: Vec<EngineHeat> = engines
                    .into_iter()
                    .map(|(engine, total_ns, count)| EngineHeat {
                        engine: names.get(engine as usize).cloned().unwrap_or_default(),
                        total_ns,
                        count,
                    })
                    .collect();
                engines.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.engine.cmp(&b.engine)));
                LineHeat {
                    path: path.to_string(),
                    line,
                    location: location.clone(),
                    total_ns,
                    count,
                    engines,
                }
            })
            .collect();
        heat.lines.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then(a.location.cmp(&b.location))
        });
        heat
    }
}

/// [`SourceHeat`] of an `Instruction` table stored as Parquet, read batch by batch (only
/// [`HEAT_COLUMNS`]). Errors: the bytes are not a readable Parquet file.
pub fn heat_of_parquet<T: parquet::file::reader::ChunkReader + 'static>(
    parquet: T,
) -> Result<SourceHeat> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ProjectionMask;
    let b = ParquetRecordBatchReaderBuilder::try_new(parquet)?
        .with_batch_size(crate::tables::BATCH_ROWS);
    let schema = b.schema().clone();
    let idx: Vec<usize> = HEAT_COLUMNS
        .iter()
        .filter_map(|c| schema.index_of(c).ok())
        .collect();
    let mask = ProjectionMask::roots(b.parquet_schema(), idx);
    let mut heat = HeatBuilder::default();
    for batch in b.with_projection(mask).build()? {
        heat.add_batch(&batch?);
    }
    Ok(heat.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SliceSource;
    use std::io::Write;

    fn archive(files: &[(&str, &[u8])], gzip: bool) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (p, data) in files {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, p, *data).unwrap();
        }
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        b.append_link(&mut h, "link.py", "kernels/moe.py").unwrap();
        let tar = b.into_inner().unwrap();
        if !gzip {
            return tar;
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn tar_gz_index_and_suffix_lookup() {
        let big = vec![b'x'; (4 << 20) + 1];
        let files: Vec<(&str, &[u8])> = vec![
            ("./src/kernels/moe.py", b"def moe():\n    pass\n"),
            ("src/other/moe.py", b"# other\n"),
            ("src/model.py", b"import torch\n"),
            ("src/weights.bin", b"\x00\x01\x02"),
            ("src/huge.py", &big),
        ];
        let data = archive(&files, true);
        let mut idx = SourceIndex::new();
        let load = idx.add_tar(&SliceSource(&data), true, "");
        assert_eq!(load.error, None);
        assert_eq!(load.added, 3);
        assert_eq!(load.skipped_binary, 1);
        assert_eq!(load.skipped_large, 1);
        assert_eq!(load.skipped_other, 1);
        assert_eq!(
            idx.get("src/kernels/moe.py").unwrap().text,
            "def moe():\n    pass\n"
        );
        // A compile-host path finds the uploaded file by its longest suffix.
        let hit = idx.lookup("/home/ubuntu/nki-moe/src/kernels/moe.py");
        assert_eq!(hit.len(), 1);
        assert_eq!(hit[0].path, "src/kernels/moe.py");
        // Only the file name in common: both candidates (a tie).
        assert_eq!(idx.lookup("C:\\work\\moe.py").len(), 2);
        assert!(idx.lookup("/x/absent.py").is_empty());
        assert_eq!(idx.lookup("model.py")[0].text, "import torch\n");
    }

    #[test]
    fn plain_tar_single_file_and_truncation() {
        let data = archive(&[("a/b.py", b"print(1)\n")], false);
        let mut idx = SourceIndex::new();
        assert_eq!(idx.add_tar(&SliceSource(&data), false, "up").added, 1);
        assert!(idx.get("up/a/b.py").is_some());
        let load = idx.add_file("/tmp/x\\y.py", &SliceSource(b"y = 2\n"));
        assert_eq!(load.added, 1);
        assert_eq!(idx.lookup("/elsewhere/x/y.py")[0].path, "tmp/x/y.py");
        // A truncated or corrupted .tar.gz never panics; earlier files stay.
        let gz = archive(&[("k/one.py", b"1\n"), ("k/two.py", b"2\n")], true);
        for cut in 0..gz.len() {
            let mut i = SourceIndex::new();
            let l = i.add_tar(&SliceSource(&gz[..cut]), true, "");
            assert!(l.added <= 2);
        }
        for pos in 0..gz.len() {
            let mut g = gz.clone();
            g[pos] ^= 0x55;
            let _ = SourceIndex::new().add_tar(&SliceSource(&g), true, "");
        }
    }

    #[test]
    fn locations_split_and_resolve() {
        assert_eq!(split_location("/a/b.py:194"), Some(("/a/b.py", 194)));
        assert_eq!(split_location("C:\\x\\b.py:7"), Some(("C:\\x\\b.py", 7)));
        assert_eq!(split_location("/a/b.py"), None);
        assert_eq!(split_location("/a/b.py:0"), None);
        assert_eq!(split_location(":3"), None);
        assert_eq!(split_location("/a/b.py:12-14"), Some(("/a/b.py", 12)));
        assert_eq!(split_location("/a/b.py:12,15"), Some(("/a/b.py", 12)));
        assert_eq!(split_location("/a/b.py:12x"), None);
        assert_eq!(split_location("/a/b.py:99999999999"), None);
        let mut idx = SourceIndex::new();
        let mut load = SourceLoad::default();
        idx.add_bytes("up/kernels/k.py", b"a\nb\n", &mut load);
        let r = idx.resolve("/home/u/kernels/k.py:2");
        assert_eq!((r.debug_path.as_str(), r.line), ("/home/u/kernels/k.py", 2));
        assert_eq!(r.files, vec!["up/kernels/k.py".to_string()]);
        assert!(idx.resolve("/home/u/other.py:1").files.is_empty());
    }

    #[test]
    fn heat_sums_durations_by_location_and_engine() {
        use arrow_array::{Int64Array, RecordBatch, StringArray};
        use std::sync::Arc;
        let b = RecordBatch::try_from_iter(vec![
            (
                "nki_source_location",
                Arc::new(StringArray::from(vec![
                    Some("/h/k.py:3"),
                    None,
                    Some("/h/k.py:3"),
                    None,
                    Some(""),
                ])) as _,
            ),
            (
                "bir_debug_info_source_location",
                Arc::new(StringArray::from(vec![
                    None,
                    Some("/h/k.py:9"),
                    None,
                    None,
                    None,
                ])) as _,
            ),
            (
                "duration_ns",
                Arc::new(Int64Array::from(vec![
                    Some(10),
                    Some(5),
                    None,
                    Some(7),
                    Some(1),
                ])) as _,
            ),
            (
                "start_ts",
                Arc::new(Int64Array::from(vec![0, 0, 100, 0, 0])) as _,
            ),
            (
                "end_ts",
                Arc::new(Int64Array::from(vec![0, 0, 130, 0, 0])) as _,
            ),
            (
                "engine",
                Arc::new(StringArray::from(vec![
                    "tensor", "vector", "vector", "sync", "sync",
                ])) as _,
            ),
        ])
        .unwrap();
        let mut hb = HeatBuilder::default();
        hb.add_batch(&b);
        hb.add_batch(&b.slice(0, 1));
        let h = hb.finish();
        assert_eq!((h.total_ns, h.count), (10 + 5 + 30 + 7 + 1 + 10, 6));
        assert_eq!((h.unattributed_ns, h.unattributed_count), (8, 2));
        assert_eq!(h.lines.len(), 2);
        let l = &h.lines[0];
        assert_eq!(
            (l.location.as_str(), l.line, l.total_ns, l.count),
            ("/h/k.py:3", 3, 50, 3)
        );
        assert_eq!(
            l.engines[0],
            EngineHeat {
                engine: "vector".into(),
                total_ns: 30,
                count: 1
            }
        );
        assert_eq!(
            l.engines[1],
            EngineHeat {
                engine: "tensor".into(),
                total_ns: 20,
                count: 2
            }
        );
        assert_eq!(
            (
                h.lines[1].path.as_str(),
                h.lines[1].line,
                h.lines[1].total_ns
            ),
            ("/h/k.py", 9, 5)
        );
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn folder_paths_are_relative_to_the_picked_folder_parent() {
        let root = std::env::temp_dir().join(format!("nscope-src-{}", std::process::id()));
        let dir = root.join("proj");
        std::fs::create_dir_all(dir.join("pkg")).unwrap();
        std::fs::write(dir.join("pkg/mod.py"), "x = 1\n").unwrap();
        std::fs::write(dir.join("data.bin"), [0u8, 1]).unwrap();
        let mut idx = SourceIndex::new();
        let load = idx.add_dir(&dir);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!((load.added, load.skipped_binary), (1, 1));
        assert_eq!(
            idx.lookup("/home/u/proj/pkg/mod.py")[0].path,
            "proj/pkg/mod.py"
        );
    }
}
