//! The one mutator of the robustness loops (issue 13): deterministic truncations and bit-flip
//! sets of an input, and an in-memory folder run through the whole pipeline the CLI and the page
//! use (inventory → pairing → decode → tables). Include with
//! `#[path = "common/mutate.rs"] mod mutate;`.

#![allow(dead_code)]

use std::rc::Rc;

use neuronscope::profile;

/// xorshift64*: the same mutants on every run and machine.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is replaced, xorshift needs a non-zero state).
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A value in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// xorshift64 with shifts (13, 7, 17), unscrambled: the generator of the older per-decoder loops
/// (NTFF, DMA, conform, whole-capture); kept so their mutants stay exactly what they were.
pub struct Xorshift(pub u64);

impl Xorshift {
    /// The next state (also the output).
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// Knuth's MMIX linear congruential generator, top 31 bits out: the pairing garbage test's.
pub struct Lcg(pub u64);

impl Lcg {
    /// The next 31 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// Offsets `0, step, 2·step, …` below `len` (`step` at least 1): where the strided loops cut or
/// flip.
pub fn offsets(len: usize, step: usize) -> std::iter::StepBy<std::ops::Range<usize>> {
    (0..len).step_by(step.max(1))
}

/// `data` with byte `pos` replaced by `f(byte)` (unchanged when `pos` is past the end).
pub fn edited(data: &[u8], pos: usize, f: impl FnOnce(u8) -> u8) -> Vec<u8> {
    let mut v = data.to_vec();
    if let Some(b) = v.get_mut(pos) {
        *b = f(*b);
    }
    v
}

/// How one mutant was made (for assertion messages).
#[derive(Debug, Clone, PartialEq)]
pub enum Mutation {
    /// The first `n` bytes.
    Truncated(usize),
    /// Bits flipped at `(byte offset, bit)`.
    Flipped(Vec<(usize, u8)>),
}

/// `truncations` cuts of `data` (at 0, 1, just before the end and spread in between, denser in
/// the first 4 KiB where the headers are), then `flip_sets` copies with 1–8 random bits flipped
/// (half of the sets within the first 4 KiB). Deterministic for a given `seed`.
pub fn mutants(
    data: &[u8],
    seed: u64,
    truncations: usize,
    flip_sets: usize,
) -> Vec<(Mutation, Vec<u8>)> {
    let n = data.len();
    let mut out = Vec::new();
    let mut cuts: Vec<usize> = vec![0, 1.min(n), n.saturating_sub(1)];
    let head = n.min(4096);
    for i in 0..truncations.saturating_sub(3) {
        let c = if i % 2 == 0 {
            head * (i + 1) / truncations.max(1)
        } else {
            n * (i + 1) / truncations.max(1)
        };
        cuts.push(c.min(n));
    }
    cuts.sort_unstable();
    cuts.dedup();
    for c in cuts {
        out.push((Mutation::Truncated(c), data[..c].to_vec()));
    }
    let mut rng = Rng::new(seed);
    for s in 0..flip_sets {
        if n == 0 {
            break;
        }
        let range = if s % 2 == 0 { head } else { n } as u64;
        let k = 1 + rng.below(8) as usize;
        let mut v = data.to_vec();
        let mut flips = Vec::with_capacity(k);
        for _ in 0..k {
            let at = rng.below(range) as usize;
            let bit = rng.below(8) as u8;
            v[at] ^= 1 << bit;
            flips.push((at, bit));
        }
        out.push((Mutation::Flipped(flips), v));
    }
    out
}

/// What [`run_folder`] saw: the library's [`profile::FolderRun`].
pub type FolderRun = profile::FolderRun;

/// Runs every profile, device and memory snapshot of the in-memory folder `files` (paths as the
/// browser gives them) as `neuronscope convert` does ([`profile::process_files`]). Panics if a
/// `process_*` call returns `Err` (only a sink failure may, and `Tables` never fails) — bad
/// input must be problems, not errors.
pub fn run_folder(files: &[(String, Rc<Vec<u8>>)]) -> FolderRun {
    let run = profile::process_files(files);
    assert!(run.errors.is_empty(), "process_* failed: {:?}", run.errors);
    run
}
