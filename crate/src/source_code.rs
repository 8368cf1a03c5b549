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
use crate::source::{ByteSource, RangeReader};

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
            self.read_tar(flate2::read::GzDecoder::new(raw), prefix, &mut load)
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
