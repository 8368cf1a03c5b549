//! NeuronCore compute engines and their names across layers (docs/format/neff.md §7.1, ntff.md §4.1).

/// A compute engine, numbered as in NTFF instruction records (0 – 4 = PE, ACT, POOL, DVE, SP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Engine {
    /// Tensor engine (PE array).
    Pe = 0,
    /// Scalar engine (Activation, ACT).
    Act = 1,
    /// GpSimd engine (POOL).
    Pool = 2,
    /// Vector engine (DVE).
    Dve = 3,
    /// Sync engine (SP).
    Sp = 4,
}

impl Engine {
    /// All engines in NTFF order.
    pub const ALL: [Engine; 5] = [
        Engine::Pe,
        Engine::Act,
        Engine::Pool,
        Engine::Dve,
        Engine::Sp,
    ];

    /// From the NTFF engine number 0 – 4 (ntff.md §4.1).
    pub fn from_ntff(n: u32) -> Option<Engine> {
        Engine::ALL.get(n as usize).copied()
    }
    /// NTFF engine number 0 – 4.
    pub fn ntff_index(self) -> usize {
        self as usize
    }
    /// Explorer's `Instruction.engine` value: tensor, scalar, gpsimd, vector, sync.
    pub fn explorer_name(self) -> &'static str {
        match self {
            Engine::Pe => "tensor",
            Engine::Act => "scalar",
            Engine::Pool => "gpsimd",
            Engine::Dve => "vector",
            Engine::Sp => "sync",
        }
    }
    /// Timeline track / JSON-export `subgroup`: Tensor, Scalar, GpSimd, Vector, Sync.
    pub fn track_name(self) -> &'static str {
        match self {
            Engine::Pe => "Tensor",
            Engine::Act => "Scalar",
            Engine::Pool => "GpSimd",
            Engine::Dve => "Vector",
            Engine::Sp => "Sync",
        }
    }
    /// Short hardware name: PE, ACT, POOL, DVE, SP.
    pub fn short_name(self) -> &'static str {
        match self {
            Engine::Pe => "PE",
            Engine::Act => "ACT",
            Engine::Pool => "POOL",
            Engine::Dve => "DVE",
            Engine::Sp => "SP",
        }
    }
    /// The engine key in a NEFF `def.json` (pe, act, pool, dve, sp).
    pub fn def_key(self) -> &'static str {
        match self {
            Engine::Pe => "pe",
            Engine::Act => "act",
            Engine::Pool => "pool",
            Engine::Dve => "dve",
            Engine::Sp => "sp",
        }
    }
    /// The engine code in NEFF `.dbg` files and `nki.isa.engine` (1, 2, 3, 5, 6).
    pub fn dbg_code(self) -> u32 {
        match self {
            Engine::Pe => 1,
            Engine::Act => 2,
            Engine::Pool => 3,
            Engine::Dve => 5,
            Engine::Sp => 6,
        }
    }
}
