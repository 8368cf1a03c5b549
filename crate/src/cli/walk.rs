//! The folders (or files) given on the command line as the inventory sees them: every regular
//! file below them, named as the browser names a picked folder's files (`<folder name>/<path>`).
//!
//! Symbolic links are followed, to files and to folders (NEFF caches and shared datasets are often
//! links). Every real folder is listed once: a link back to an ancestor (a loop) or to a folder
//! already listed is reported and not entered again, so the walk always ends. A dangling link,
//! or a folder that cannot be read, is a Warning problem; the rest of the walk goes on.
//!
//! Virtual paths are text (the inventory, the page and the tables name files by them); a name
//! that is not UTF-8 (Linux allows any bytes but `/` and NUL) is shown lossily (U+FFFD), or with
//! its bad bytes written as `%FF` when that would repeat a name already listed, and opened by its
//! real name: every listed file's path on disk is kept ([`Picked::path_of`]).

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use neuronscope::source::FileSource;
use neuronscope::{ByteSource, Code, Error, Problem, Result};

/// One command-line input: the name its files are listed under and where it is on disk.
pub struct Root {
    /// First component of every virtual path of this input (the folder's own name; `name~2`,
    /// `name~3`, … when two inputs have the same name).
    pub name: String,
    /// The folder (or file) on disk, canonical.
    pub path: PathBuf,
}

/// Every file of the inputs, with the problems the walk met.
pub struct Picked {
    /// The inputs, in command-line order.
    pub roots: Vec<Root>,
    /// `(virtual '/' path, size in bytes)`, sorted by path.
    pub files: Vec<(String, u64)>,
    /// Dangling links, link loops, folders listed twice, unreadable folders.
    pub problems: Vec<Problem>,
    /// Virtual path of every file found inside a folder → its path on disk (through the links
    /// it was found by). Kept because a virtual path cannot always be turned back into the
    /// name on disk: a name that is not UTF-8 is only shown lossily.
    real: HashMap<String, PathBuf>,
}

impl Picked {
    /// Where a virtual path is on disk (through the links it was found by).
    pub fn path_of(&self, virt: &str) -> Option<PathBuf> {
        if let Some(p) = self.real.get(virt) {
            return Some(p.clone());
        }
        let (first, rest) = virt.split_once('/').unwrap_or((virt, ""));
        let root = self.roots.iter().find(|r| r.name == first)?;
        Some(if rest.is_empty() {
            root.path.clone()
        } else {
            root.path.join(rest)
        })
    }

    /// Opens a virtual path for random access (the inventory's and decoders' `open`).
    pub fn open(&self, virt: &str) -> Result<Box<dyn ByteSource>> {
        let p = self
            .path_of(virt)
            .ok_or_else(|| Error::Io(format!("{virt}: not among the inputs")))?;
        Ok(Box::new(FileSource::open(&p)?))
    }

    /// [`Self::open`] as a source several threads may read at once (the split NTFF decode's
    /// DMA threads, [`neuronscope::profile::DeviceOptions::dma_open`]).
    pub fn open_shared(&self, virt: &str) -> Result<Box<dyn ByteSource + Sync>> {
        let p = self
            .path_of(virt)
            .ok_or_else(|| Error::Io(format!("{virt}: not among the inputs")))?;
        Ok(Box::new(FileSource::open(&p)?))
    }

    /// The virtual path of a file on disk that lies inside one of the inputs (not through a link).
    pub fn virtual_of(&self, real: &Path) -> Option<String> {
        let real = real.canonicalize().ok()?;
        let guess = self.roots.iter().find_map(|r| {
            let rel = real.strip_prefix(&r.path).ok()?;
            let rel: Vec<String> = rel.iter().map(shown).collect();
            let rel = rel.join("/");
            Some(if rel.is_empty() {
                r.name.clone()
            } else {
                format!("{}/{rel}", r.name)
            })
        })?;
        let same = |v: &String| {
            self.path_of(v)
                .and_then(|p| p.canonicalize().ok())
                .is_some_and(|p| p == real)
        };
        if same(&guess) {
            return Some(guess);
        }
        // A name that is not UTF-8 is listed under another text than its lossy form.
        let mut hits: Vec<&String> = self.real.keys().filter(|v| same(v)).collect();
        hits.sort();
        Some(hits.first().map_or(guess, |v| (*v).clone()))
    }
}

/// Lists every input (folders walked, files taken as they are).
///
/// Errors: an input that does not exist or cannot be read at all; everything below an input
/// that cannot be read is a problem in [`Picked::problems`] instead.
pub fn pick(inputs: &[PathBuf]) -> Result<Picked> {
    let mut picked = Picked {
        roots: Vec::new(),
        files: Vec::new(),
        problems: Vec::new(),
        real: HashMap::new(),
    };
    // Canonical folder → the virtual path it was first listed under.
    let mut seen: HashMap<PathBuf, String> = HashMap::new();
    for input in inputs {
        let real = input
            .canonicalize()
            .map_err(|e| Error::Io(format!("{}: {e}", input.display())))?;
        let base = real.file_name().map_or_else(|| "root".into(), shown);
        let mut name = base.clone();
        let mut k = 1;
        while picked.roots.iter().any(|r| r.name == name) {
            k += 1;
            name = format!("{base}~{k}");
        }
        let meta =
            std::fs::metadata(&real).map_err(|e| Error::Io(format!("{}: {e}", input.display())))?;
        if meta.is_file() {
            picked.files.push((name.clone(), meta.len()));
        } else {
            if let Some(first) = seen.get(&real) {
                picked.problems.push(Problem::new(
                    Code::InputRepeated,
                    Some(&name),
                    format!(
                        "{}: already listed as {first}; not listed again",
                        input.display()
                    ),
                ));
                continue;
            }
            std::fs::read_dir(&real).map_err(|e| Error::Io(format!("{}: {e}", input.display())))?;
            seen.insert(real.clone(), name.clone());
            walk_dir(&real, &name, &mut seen, &mut picked);
        }
        picked.roots.push(Root { name, path: real });
    }
    picked.files.sort();
    Ok(picked)
}

/// Walks one input folder (`real`, canonical) whose files are named `virt/…`.
fn walk_dir(real: &Path, virt: &str, seen: &mut HashMap<PathBuf, String>, picked: &mut Picked) {
    // (canonical folder, its virtual path, the path to read it by)
    let mut stack: Vec<(PathBuf, String, PathBuf)> =
        vec![(real.to_path_buf(), virt.to_string(), real.to_path_buf())];
    // Every virtual path given out below this input (files and folders).
    let mut used: HashSet<String> = HashSet::new();
    while let Some((canon, vdir, read_path)) = stack.pop() {
        let entries = match std::fs::read_dir(&read_path) {
            Ok(e) => e,
            Err(e) => {
                picked.problems.push(Problem::new(
                    Code::UnreadableDir,
                    Some(&vdir),
                    format!("{vdir}: folder not readable ({e}); its files are not listed"),
                ));
                continue;
            }
        };
        // Sorted, so the first of two names for one folder is always the same one.
        let mut entries: Vec<std::fs::DirEntry> = entries.filter_map(|e| e.ok()).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let vpath = child_name(&vdir, &entry.file_name(), &mut used);
            let Ok(ft) = entry.file_type() else { continue };
            let is_link = ft.is_symlink();
            // Follows the link, if it is one.
            let meta = match std::fs::metadata(&path) {
                Ok(m) => m,
                Err(e) => {
                    let target = std::fs::read_link(&path)
                        .map(|t| t.display().to_string())
                        .unwrap_or_else(|_| "?".into());
                    let (code, what) = if is_link {
                        (
                            Code::DanglingLink,
                            format!("symbolic link to {target} that cannot be followed ({e})"),
                        )
                    } else {
                        (Code::UnreadableFile, format!("not readable ({e})"))
                    };
                    picked.problems.push(Problem::new(
                        code,
                        Some(&vpath),
                        format!("{vpath}: {what}; skipped"),
                    ));
                    continue;
                }
            };
            if meta.is_file() {
                picked.real.insert(vpath.clone(), path);
                picked.files.push((vpath, meta.len()));
                continue;
            }
            if !meta.is_dir() {
                // A pipe or device could block or never end: not read, but said (`-v`).
                picked.problems.push(Problem::new(
                    Code::NotAFile,
                    Some(&vpath),
                    format!("{vpath}: not a regular file (a pipe, socket or device); skipped"),
                ));
                continue;
            }
            let Ok(target) = path.canonicalize() else {
                continue;
            };
            if let Some(first) = seen.get(&target) {
                // A link to an ancestor would list the tree forever; one to a folder listed
                // elsewhere would list (and convert) its files twice.
                let (code, what) = if canon.starts_with(&target) {
                    (
                        Code::LinkLoop,
                        format!("link back to its own ancestor {first} (a loop)"),
                    )
                } else {
                    (
                        Code::LinkRepeated,
                        format!("the same folder as {first}, already listed"),
                    )
                };
                picked.problems.push(Problem::new(
                    code,
                    Some(&vpath),
                    format!("{vpath}: {what}; not entered"),
                ));
                continue;
            }
            seen.insert(target.clone(), vpath.clone());
            // A real sub-folder is read by its own path; a linked one by the link.
            stack.push((target, vpath, path));
        }
    }
}

/// The virtual path of entry `name` of the folder listed as `vdir`: `vdir/<name>` with a name
/// that is not UTF-8 shown lossily, or with its bad bytes written as `%FF` when the lossy text is
/// already taken (two names differing only in bad bytes), else numbered (`name~2`). Recorded in
/// `used`.
fn child_name(vdir: &str, name: &OsStr, used: &mut HashSet<String>) -> String {
    let lossy = format!("{vdir}/{}", shown(name));
    let mut candidates = vec![lossy.clone()];
    if name.to_str().is_none() {
        candidates.push(format!("{vdir}/{}", escaped(name)));
    }
    let pick = candidates
        .into_iter()
        .find(|c| !used.contains(c))
        .unwrap_or_else(|| {
            (2u64..)
                .map(|k| format!("{lossy}~{k}"))
                .find(|c| !used.contains(c))
                .unwrap_or(lossy)
        });
    used.insert(pick.clone());
    pick
}

/// A file or folder name as one component of a virtual path: its lossy text, with a backslash
/// written as `%5C` (a Linux name may hold one; the inventory reads `\` as a separator, as the
/// browser's Windows paths need).
fn shown(name: &OsStr) -> String {
    name.to_string_lossy().replace('\\', "%5C")
}

/// `name` with each byte that is not part of valid UTF-8, and a backslash, written as `%NN` (not
/// `\xNN`: see [`shown`]; Unix; elsewhere [`shown`]'s text).
fn escaped(name: &OsStr) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let mut out = String::new();
        for chunk in name.as_bytes().utf8_chunks() {
            out.push_str(&chunk.valid().replace('\\', "%5C"));
            for b in chunk.invalid() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    }
    #[cfg(not(unix))]
    {
        shown(name)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn names_that_are_not_utf8_stay_apart() {
        let mut used = HashSet::new();
        let a = OsStr::from_bytes(b"v6b\xff\xfe.neff");
        let b = OsStr::from_bytes(b"v6b\xfe\xff.neff");
        assert_eq!(child_name("d", a, &mut used), "d/v6b\u{FFFD}\u{FFFD}.neff");
        assert_eq!(child_name("d", b, &mut used), "d/v6b%FE%FF.neff");
        // A third one whose escaped text is taken too (a file named with the escape itself).
        assert_eq!(
            child_name("d", OsStr::new("v6b%FE%FF.neff"), &mut used),
            "d/v6b%FE%FF.neff~2"
        );
        assert_eq!(
            child_name("d", OsStr::new("ok.ntff"), &mut used),
            "d/ok.ntff"
        );
        // A backslash is no separator on Linux: kept inside its component.
        assert_eq!(
            child_name("d", OsStr::new("a\\b.ntff"), &mut used),
            "d/a%5Cb.ntff"
        );
    }
}
