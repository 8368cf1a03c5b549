//! Instruction attribution (docs/format/ntff.md §7.3 – §7.4, neff.md §9.3, §10.3): runtime pc →
//! compiler pc → asm record → BIR → Penguin → HLO → framework, filling the `Instruction` columns
//! `compiler_pc`, `bir_*`, `penguin_id`, `raw_penguin_id`, `hlo_name`, `raw_hlo_id`, `layer`,
//! `stack_frame_ids`, `nki_source_location`, `bir_debug_info_source_location` and
//! `kernel_instruction_name`. Unknown values stay null.

use super::decode::ins;
use crate::neff::debug::{DbgFile, NeffDebug, SubgraphDebug};
use crate::tables::{kind, MemoGroup, TableBuilder, C};

/// `0xB1` (SET_ORDERING_MODE): the slot right before the body is the NEFF's slot 0 (ntff.md §7.3).
pub const ANCHOR: u8 = 0xB1;
/// NEFF pseudo-instruction opcode rewritten by the runtime ...
pub const PSEUDO_DMA: u8 = 0xD4;
/// ... into DMA_DIRECT2D.
pub const DMA_DIRECT2D: u8 = 0xB8;

/// Where the NEFF body sits in a runtime stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alignment {
    /// Runtime slot of NEFF slot 2 (`o` in ntff.md §7.3).
    pub offset: u32,
    /// Body slots whose opcodes agree (equal, or `0xD4` → `0xB8`).
    pub agree: u32,
    /// Body slots compared (NEFF slots 2 … n−1 that fall inside the runtime stream).
    pub compared: u32,
    /// NEFF slot count.
    pub neff_slots: u32,
}

impl Alignment {
    /// Compiler pc of runtime `pc`: `pc − o + 2` inside the body, 0 for the copy of NEFF slot 0
    /// (slot `o − 1`, as the export writes it), `None` for prologue and epilogue.
    pub fn compiler_pc(&self, pc: u32) -> Option<u32> {
        if pc.checked_add(1) == Some(self.offset) {
            return Some(0);
        }
        let c = pc.checked_sub(self.offset)?.checked_add(2)?;
        (c < self.neff_slots).then_some(c)
    }
}

fn agrees(runtime: u8, neff: u8) -> bool {
    runtime == neff || (neff == PSEUDO_DMA && runtime == DMA_DIRECT2D)
}

/// Aligns a runtime stream (byte 0 per slot, from the NTFF code block) with the NEFF stream
/// (byte 0 per slot): among runtime slots right after a `0xB1` slot, the offset where runtime
/// slots agree best with NEFF slots 2, 3, …; ties → the last candidate (ntff.md §7.3). A NEFF
/// stream of only slots 0 – 1 (the idle `sg01` streams) has an empty body: every candidate ties
/// and the last `0xB1` is the copy of slot 0 (the export's `compiler_pc` 0 there, 35/35 rows).
/// `None` when the NEFF stream is empty or the runtime stream has no anchor.
pub fn align(runtime: &[u8], neff: &[u8]) -> Option<Alignment> {
    if neff.is_empty() {
        return None;
    }
    let body = neff.get(2..).unwrap_or(&[]);
    let mut best: Option<Alignment> = None;
    for (i, &op) in runtime.iter().enumerate() {
        if op != ANCHOR {
            continue;
        }
        let o = i + 1;
        let Some(rt) = runtime.get(o..) else {
            continue;
        };
        let n = rt.len().min(body.len());
        let agree = rt.iter().zip(body).filter(|(&r, &b)| agrees(r, b)).count();
        let cand = Alignment {
            offset: o as u32,
            agree: agree as u32,
            compared: n as u32,
            neff_slots: neff.len().min(u32::MAX as usize) as u32,
        };
        if best.is_none_or(|b| cand.agree >= b.agree) {
            best = Some(cand);
        }
    }
    best
}

/// Resolved names of one compiler pc.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SlotInfo {
    pub bir_instruction_name: Option<String>,
    pub bir_id: Option<String>,
    pub raw_bir_id: Option<i64>,
    pub penguin_id: Option<String>,
    pub raw_penguin_id: Option<i64>,
    pub hlo_name: Option<String>,
    pub raw_hlo_id: Option<i64>,
    pub layer: Option<String>,
    pub stack_frame_ids: Option<String>,
    pub nki_source_location: Option<String>,
    pub bir_debug_info_source_location: Option<String>,
    pub kernel_instruction_name: Option<String>,
    /// Index into `KernelDebug::insts` when the kernel instruction exists.
    pub kernel_instruction: Option<usize>,
}

/// `raw_bir_id` packing: subgraph bits 63:48, function 47:32 (unknown here: 0), instruction
/// id 31:0 [DOC: profile-schema-reference; 1 976/1 976 allenkchau rows have subgraph 0].
pub fn pack_bir_id(subgraph: u32, id: u64) -> i64 {
    ((((subgraph as u64) & 0xFFFF) << 48) | (id & 0xFFFF_FFFF)) as i64
}

/// HLO op name from an HLO record name: `%dot.1 = f32[..] dot(..)` → `dot.1`.
pub fn hlo_op_name(name: &str) -> &str {
    let lhs = name.split(" = ").next().unwrap_or(name);
    lhs.trim().trim_start_matches('%')
}

/// KLIR instruction name of a BIR record name: `inst.186-wait-0` → `inst.186` (neff.md §10.3);
/// other names unchanged.
pub fn klir_name(name: &str) -> &str {
    if name.starts_with("inst.") || name.starts_with("jmp.") {
        name.split('-').next().unwrap_or(name)
    } else {
        name
    }
}

fn first_parent(f: &DbgFile, r: &crate::neff::debug::DbgRecord) -> Option<u64> {
    f.parents(r).first().copied()
}

/// Resolves compiler pc `cpc` of engine `engine` (NTFF order) of subgraph `sg`.
pub fn resolve(d: &NeffDebug, sg: &SubgraphDebug, engine: usize, cpc: u32) -> SlotInfo {
    let mut out = SlotInfo::default();
    let Some(ed) = sg.engines.get(engine).and_then(Option::as_ref) else {
        return out;
    };
    let s = &d.strings;
    let Some(asm) = &ed.asm else { return out };
    let Some(ar) = asm.records.get(cpc as usize) else {
        return out;
    };
    let Some(bid) = first_parent(asm, ar) else {
        return out;
    };
    let Some(be) = &ed.backend else { return out };
    let Some(br) = be.by_id(bid) else { return out };
    let bname = s.get(br.name);
    out.bir_instruction_name = Some(bname.to_string());
    out.bir_id = Some(format!("sg{:04}:{}", sg.number, br.id));
    out.raw_bir_id = Some(pack_bir_id(sg.number, br.id));
    let loc = match (
        be.attr(s, br, "kernel_file")
            .and_then(|i| i.trim().parse::<usize>().ok())
            .and_then(|i| be.files.get(i))
            .map(|&f| s.get(f)),
        be.attr(s, br, "kernel_line"),
    ) {
        (Some(f), Some(l)) => Some(format!("{f}:{l}")),
        _ => None,
    };
    out.bir_debug_info_source_location = loc.clone();
    out.nki_source_location = loc;
    let pid = first_parent(be, br);
    if let Some(p) = pid {
        out.penguin_id = Some(format!("sg{:04}:{p}", sg.number));
        out.raw_penguin_id = i64::try_from(p).ok();
        if let Some(k) = &d.kernel {
            let kin = format!("{}:{p}", klir_name(bname));
            out.kernel_instruction = k.by_name.get(&kin).copied();
            out.kernel_instruction_name = Some(kin);
        }
    }
    let pen = d.parent_file(&be.parent, sg.number);
    let Some((pen, pr)) = pen.zip(pid).and_then(|(f, p)| Some((f, f.by_id(p)?))) else {
        return out;
    };
    let Some(hid) = first_parent(pen, pr) else {
        return out;
    };
    out.raw_hlo_id = i64::try_from(hid).ok();
    let Some(hlo) = d.parent_file(&pen.parent, sg.number) else {
        return out;
    };
    let Some(hr) = hlo.by_id(hid) else { return out };
    out.hlo_name = Some(hlo_op_name(s.get(hr.name)).to_string());
    let frames = hlo.frames(hr);
    if !frames.is_empty() {
        let ids: Vec<String> = frames.iter().map(u64::to_string).collect();
        out.stack_frame_ids = Some(ids.join(","));
    }
    let Some(fid) = first_parent(hlo, hr) else {
        return out;
    };
    if let Some(fr) = d
        .parent_file(&hlo.parent, sg.number)
        .and_then(|f| f.by_id(fid))
    {
        out.layer = Some(s.get(fr.name).to_string());
    }
    out
}

/// Streams up to this many slots get their names resolved once per slot (bounded memory:
/// a few hundred bytes per slot); longer ones are resolved per row.
pub const CACHE_SLOTS: u32 = 1 << 16;

/// Fills the attribution columns of `Instruction` rows during one NTFF decode: call
/// [`Attributor::subgraph`] before a subgraph's records, then [`Attributor::fill`] per row.
pub struct Attributor<'a> {
    debug: &'a NeffDebug,
    /// Current subgraph.
    sg: Option<&'a SubgraphDebug>,
    /// Per engine: alignment and resolved slots (index = compiler pc); the slot cache is left
    /// empty for streams over [`CACHE_SLOTS`] slots, which are resolved per row instead.
    engines: [Option<(Alignment, Vec<SlotInfo>)>; 5],
    /// Per engine, per cached slot: dictionary-key memos of its nine name columns, so a pc's
    /// names are hashed once per batch, not once per row, and its keys checked once per row.
    memos: [Vec<MemoGroup<9>>; 5],
    /// Alignments found in the current subgraph (for reports and tests).
    pub alignments: Vec<(String, usize, Alignment)>,
}

impl<'a> Attributor<'a> {
    /// A filler using `debug`.
    pub fn new(debug: &'a NeffDebug) -> Self {
        Attributor {
            debug,
            sg: None,
            engines: Default::default(),
            memos: Default::default(),
            alignments: Vec::new(),
        }
    }

    /// Prepares subgraph `name` given byte 0 of every runtime slot per engine (NTFF order).
    /// A subgraph or engine the NEFF lacks gets no attribution.
    pub fn subgraph(&mut self, name: &str, runtime: [&[u8]; 5]) {
        self.engines = Default::default();
        self.memos = Default::default();
        self.sg = self.debug.subgraph(name);
        let Some(sg) = self.sg else {
            return;
        };
        for (e, rt) in runtime.iter().enumerate() {
            let Some(ed) = sg.engines.get(e).and_then(Option::as_ref) else {
                continue;
            };
            let Some(a) = align(rt, &ed.opcodes) else {
                continue;
            };
            self.alignments.push((name.to_string(), e, a));
            let slots = if a.neff_slots <= CACHE_SLOTS {
                (0..a.neff_slots)
                    .map(|c| resolve(self.debug, sg, e, c))
                    .collect()
            } else {
                Vec::new()
            };
            if let Some(m) = self.memos.get_mut(e) {
                *m = vec![MemoGroup::default(); slots.len()];
            }
            if let Some(x) = self.engines.get_mut(e) {
                *x = Some((a, slots));
            }
        }
    }

    /// Sets the attribution cells of the current row of `b` for runtime `pc` of `engine`.
    pub fn fill(&mut self, b: &mut TableBuilder, engine: usize, pc: u32) {
        let Some((a, slots)) = self.engines.get(engine).and_then(Option::as_ref) else {
            return;
        };
        let Some(cpc) = a.compiler_pc(pc) else {
            return;
        };
        b.set(ins::COMPILER_PC, i64::from(cpc));
        // The copy of NEFF slot 0 carries no names in the export (ntff.md §7.3).
        if cpc < 2 {
            return;
        }
        let memo = self
            .memos
            .get_mut(engine)
            .and_then(|m| m.get_mut(cpc as usize));
        if let (Some(s), Some(m)) = (slots.get(cpc as usize), memo) {
            fill_slot(b, s, Some(m));
            return;
        }
        if let Some(sg) = self.sg {
            fill_slot(b, &resolve(self.debug, sg, engine, cpc), None);
        }
    }
}

/// Sets the name and id cells of one row from slot `s`, through `memo` when the slot is cached.
fn fill_slot(b: &mut TableBuilder, s: &SlotInfo, memo: Option<&mut MemoGroup<9>>) {
    const COLS: [C<kind::Str>; 9] = [
        ins::BIR_NAME,
        ins::BIR_ID,
        ins::PENGUIN_ID,
        ins::HLO_NAME,
        ins::LAYER,
        ins::STACK_FRAME_IDS,
        ins::NKI_LOC,
        ins::BIR_LOC,
        ins::KERNEL_NAME,
    ];
    let name = |j: usize| match j {
        0 => s.bir_instruction_name.as_deref(),
        1 => s.bir_id.as_deref(),
        2 => s.penguin_id.as_deref(),
        3 => s.hlo_name.as_deref(),
        4 => s.layer.as_deref(),
        5 => s.stack_frame_ids.as_deref(),
        6 => s.nki_source_location.as_deref(),
        7 => s.bir_debug_info_source_location.as_deref(),
        8 => s.kernel_instruction_name.as_deref(),
        _ => None,
    };
    match memo {
        Some(m) => b.set_memo_group(&COLS, m, name),
        None => {
            for (j, c) in COLS.into_iter().enumerate() {
                b.set(c, name(j));
            }
        }
    }
    b.set(ins::RAW_BIR_ID, s.raw_bir_id);
    b.set(ins::RAW_PENGUIN_ID, s.raw_penguin_id);
    b.set(ins::RAW_HLO_ID, s.raw_hlo_id);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn align_anchor_rewrite_and_ties() {
        // NEFF: B1 CC D4 02 A6 ; runtime: prologue A0 B1 | B1 B8 02 A6 | A2
        let neff = [0xB1, 0xCC, 0xD4, 0x02, 0xA6];
        let rt = [0xA0, 0xB1, 0xB1, 0xB8, 0x02, 0xA6, 0xA2];
        let a = align(&rt, &neff).unwrap();
        assert_eq!(a.offset, 3);
        assert_eq!(a.agree, 3);
        assert_eq!(a.compiler_pc(2), Some(0));
        assert_eq!(a.compiler_pc(3), Some(2));
        assert_eq!(a.compiler_pc(5), Some(4));
        assert_eq!(a.compiler_pc(6), None);
        assert_eq!(a.compiler_pc(0), None);
        // Ties → last candidate.
        let rt = [0xB1, 0x00, 0xB1, 0x00];
        assert_eq!(align(&rt, &[0xB1, 0xCC, 0x05]).unwrap().offset, 3);
        let a = align(&rt, &[0xB1, 0xCC]).unwrap();
        assert_eq!(
            (a.offset, a.compiler_pc(2), a.compiler_pc(3)),
            (3, Some(0), None)
        );
        assert_eq!(align(&rt, &[]), None);
        assert_eq!(align(&[], &neff), None);
    }

    #[test]
    fn names() {
        assert_eq!(
            hlo_op_name("%custom-call.1 = custom-call(x)"),
            "custom-call.1"
        );
        assert_eq!(klir_name("inst.186-wait-0"), "inst.186");
        assert_eq!(klir_name("I-72-0-wait-0"), "I-72-0-wait-0");
        assert_eq!(pack_bir_id(1, 249), (1i64 << 48) | 249);
    }
}
