//! The content sniffer (`neuronscope::sniff`) on every sample file INDEX.tsv lists: each kind is
//! recognised from its bytes alone, as what INDEX.tsv says it is (NTFF with its version byte).

mod common;
use common::samples;

use neuronscope::sniff::{sniff_source, Sniffed};
use neuronscope::source::FileSource;

#[test]
fn every_sample_is_recognised_by_content() {
    let root = samples();
    let index = std::fs::read_to_string(root.join("INDEX.tsv")).unwrap();
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for line in index.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        let (source, path, kind, version) = (f[0], f[1], f[2], f.get(5).copied().unwrap_or(""));
        let p = root.join(source).join(path);
        if !p.is_file() {
            continue;
        }
        let got = sniff_source(&FileSource::open(&p).unwrap()).unwrap();
        let want = match kind {
            "NEFF" => Sniffed::Neff,
            "NTFF" => Sniffed::Ntff {
                version: version.trim_start_matches("ntff_v").parse().unwrap(),
            },
            "PB:ntrace.pb" => Sniffed::FramedProtobuf { samples: false },
            "PB:cpu_util.pb" | "PB:host_mem.pb" => Sniffed::FramedProtobuf { samples: true },
            "PB:trace_info.pb" => Sniffed::Protobuf,
            "JSON" | "JSON:neuron-profile-json-full" => Sniffed::Json,
            "CSV" | "DOC" => Sniffed::Text,
            other => panic!("{path}: kind {other} not covered"),
        };
        assert_eq!(got, want, "{source}/{path} ({kind})");
        *counts.entry(kind.to_string()).or_default() += 1;
    }
    // Every kind present, NEFFs and NTFFs all of them (a sample set that shrank would pass
    // without these).
    assert_eq!(counts.get("NEFF"), Some(&84), "{counts:?}");
    assert_eq!(counts.get("NTFF"), Some(&50), "{counts:?}");
    for k in [
        "PB:ntrace.pb",
        "PB:cpu_util.pb",
        "PB:host_mem.pb",
        "PB:trace_info.pb",
        "JSON:neuron-profile-json-full",
    ] {
        assert!(counts.contains_key(k), "{k}: {counts:?}");
    }
}
