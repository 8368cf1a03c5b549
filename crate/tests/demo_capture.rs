//! The built-in demo capture (`synth::demo_capture`) through the whole pipeline: inventory →
//! pairing → device tables. What the writers put in (DMA packets, throttle records, the `.dbg`
//! chain, the kernel source) must come out of the decoders unchanged.

use std::rc::Rc;

use arrow_array::{Array, Int32Array, Int64Array, RecordBatch, StringArray};
use neuronscope::engine::Engine;
use neuronscope::inventory;
use neuronscope::profile;
use neuronscope::synth::{self, demo_attribution, DEMO_SOURCE, DEMO_SOURCE_TEXT};
use neuronscope::tables::Tables;
use neuronscope::{ByteSource, Result};

fn col<'a, T: 'static>(b: &'a RecordBatch, name: &str) -> &'a T {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("column {name}"))
        .as_any()
        .downcast_ref::<T>()
        .unwrap_or_else(|| panic!("type of {name}"))
}

fn opt_str(a: &StringArray, i: usize) -> Option<&str> {
    (!a.is_null(i)).then(|| a.value(i))
}

/// Decodes the demo's only device; returns the tables, the result and the file list.
fn decode_demo() -> (Tables, profile::DeviceResult, Vec<(String, Vec<u8>)>) {
    let files = synth::demo_capture().unwrap();
    let shared: Rc<Vec<(String, Vec<u8>)>> = Rc::new(files.clone());
    let f2 = shared.clone();
    let open = move |p: &str| -> Result<Box<dyn ByteSource>> {
        let b = f2
            .iter()
            .find(|(n, _)| n == p)
            .map(|(_, b)| b.clone())
            .unwrap_or_default();
        Ok(Box::new(b))
    };
    let list: Vec<(String, u64)> = files
        .iter()
        .map(|(n, b)| (n.clone(), b.len() as u64))
        .collect();
    let inv = inventory::build(&list, &open);
    assert_eq!(inv.profiles.len(), 1, "{:#?}", inv.profiles);
    let p = &inv.profiles[0];
    assert_eq!(p.devices.len(), 1);
    assert!(
        p.system_files
            .iter()
            .chain(&p.other_files)
            .any(|f| f.ends_with("memory_snapshot_rank0.pickle")),
        "the demo lists its memory snapshot: {p:#?}"
    );
    assert!(inv.problems.is_empty(), "{:#?}", inv.problems);
    assert!(p.problems.is_empty(), "{:#?}", p.problems);
    let mut t = Tables::default();
    let r = profile::process_device(&inv, &p.id, 0, &open, &mut t, &mut |_, _, _| {}).unwrap();
    (t, r, files)
}

#[test]
fn demo_has_dma_throttle_and_no_warnings() {
    let (t, r, files) = decode_demo();
    // Only Explorer's own "Missing Data" warnings, which are true of the demo: its writer records
    // no DGE notifications and its NEFF has no compiler metrics or hlo_stats.json (derived.rs).
    let mut msgs: Vec<&str> = r.problems.iter().map(|p| p.message.as_str()).collect();
    msgs.sort_unstable();
    let mut want = vec![
        neuronscope::derived::MSG_MISSING_COMPILER_METRICS,
        neuronscope::derived::MSG_MISSING_DGE,
        neuronscope::derived::MSG_MISSING_HLO_STATS,
    ];
    want.sort_unstable();
    assert_eq!(msgs, want, "demo problems: {:#?}", r.problems);
    assert!(r
        .problems
        .iter()
        .all(|p| p.code == neuronscope::derived::CATEGORY_MISSING_DATA));
    // 2 cores × 6 iterations × 24 packets (synth / ntff::write::default_dma_queues).
    assert_eq!(t.rows("DmaPacket"), 288);
    assert_eq!(t.rows("Throttle"), 12);
    let q = t.concat("DmaQueuesInfo").unwrap();
    let names = col::<StringArray>(&q, "name");
    let mut names: Vec<&str> = (0..q.num_rows()).map(|i| names.value(i)).collect();
    names.dedup();
    names.sort();
    names.dedup();
    assert_eq!(
        names,
        [
            "qGpSimdDynamic",
            "qScalarDynamicHW",
            "qSyncDynamicHW",
            "qSyncSpillReload0"
        ]
    );
    let d = t.concat("DmaPacket").unwrap();
    let qt = col::<StringArray>(&d, "queue_type");
    let kinds: std::collections::BTreeSet<&str> = (0..d.num_rows()).map(|i| qt.value(i)).collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [
            "data",
            "hardware_dynamic",
            "instruction",
            "software_dynamic"
        ]
    );
    let src = files.iter().find(|(n, _)| n == DEMO_SOURCE).unwrap();
    assert_eq!(src.1, DEMO_SOURCE_TEXT.as_bytes());
}

/// Every body instruction's attribution equals what the demo's `.dbg` chain says
/// (`synth::demo_attribution`), and its source line exists in the demo kernel file.
#[test]
fn demo_attribution_roundtrips() {
    let (t, _r, _) = decode_demo();
    let b = t.concat("Instruction").unwrap();
    let engine = col::<StringArray>(&b, "engine");
    let cpc = col::<Int64Array>(&b, "compiler_pc");
    let op = col::<Int32Array>(&b, "nscope_opcode_byte");
    let bir = col::<StringArray>(&b, "bir_instruction_name");
    let hlo = col::<StringArray>(&b, "hlo_name");
    let layer = col::<StringArray>(&b, "layer");
    let loc = col::<StringArray>(&b, "nki_source_location");
    let lines: Vec<&str> = DEMO_SOURCE_TEXT.lines().collect();
    let mut checked = 0;
    for i in 0..b.num_rows() {
        if cpc.is_null(i) || cpc.value(i) < 2 {
            assert!(
                opt_str(loc, i).is_none(),
                "row {i}: location outside the body"
            );
            continue;
        }
        let e = Engine::ALL
            .into_iter()
            .find(|e| e.explorer_name() == engine.value(i))
            .unwrap();
        // The NEFF's 0xD4 pseudo-DMA runs as 0xB8 (ntff.md §7.3).
        let neff_op = match op.value(i) as u8 {
            0xB8 => 0xD4,
            x => x,
        };
        let want = demo_attribution(e, cpc.value(i) as usize, neff_op);
        assert_eq!(opt_str(bir, i), Some(want.bir_instruction_name.as_str()));
        assert_eq!(opt_str(hlo, i), Some(want.hlo_name.as_str()));
        assert_eq!(opt_str(layer, i), Some(want.layer.as_str()));
        assert_eq!(opt_str(loc, i), Some(want.nki_source_location.as_str()));
        let line: usize = want
            .nki_source_location
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(!lines[line - 1].trim().is_empty(), "line {line} is code");
        checked += 1;
    }
    assert!(checked > 3000, "{checked} attributed rows");
    let hlos: std::collections::BTreeSet<&str> =
        (0..b.num_rows()).filter_map(|i| opt_str(hlo, i)).collect();
    assert_eq!(hlos.len(), 5, "{hlos:?}");
}
