//! Writer for synthetic NEFFs (built-in demo, benchmarks, round-trip tests): a 1024-byte header
//! with correct `data_size` and MD5 (word-swapped as compilers 2.18 – 2.23 store it, or
//! canonical), then one gzip member of a ustar archive built with the `tar` crate, then zero
//! padding to a multiple of 10240 bytes (docs/format/neff.md §2, §3). Members: `info.json`,
//! `kelf-0.json`, `neff.json`, per subgraph `sgNN/def.json`, `sgNN/tensor_map.json` and the five
//! engine streams (`PE.bin`, `Activation.bin`, `Pool.bin`, `DVE.bin`, `SP.bin`), plus any extra
//! members the caller supplies.

use std::io::Write;

use md5::{Digest, Md5};
use serde_json::{json, Map, Value};

use crate::engine::Engine;

use super::{DmaQueue, TensorMapEntry, Var, HEADER_LEN};

/// One subgraph of a synthetic NEFF.
#[derive(Debug, Clone, Default)]
pub struct SubgraphSpec {
    /// Opcode byte (byte 0) of each 64-byte slot, per engine; the slot count is the length.
    /// Engines not listed get an empty stream. Byte 1 of every slot is 0x10 (as in real streams).
    pub engines: Vec<(Engine, Vec<u8>)>,
    /// `def.json` `var` entries.
    pub vars: Vec<Var>,
    /// `def.json` `dma_queue` entries.
    pub dma_queues: Vec<DmaQueue>,
    /// `tensor_map.json` entries.
    pub tensors: Vec<TensorMapEntry>,
}

/// What to put in a synthetic NEFF.
#[derive(Debug, Clone)]
pub struct NeffSpec {
    /// Network name (header `name`, `info.json` `name`), e.g. `demo.neff`.
    pub name: String,
    /// Header uuid (16 raw bytes); pairs NTFFs (pairing.md §4).
    pub uuid: [u8; 16],
    /// `info.json` `tool_version`, e.g. `2.23.6484.0+3b612583`.
    pub compiler_version: String,
    /// `kelf-0.json` `target`, e.g. `cayman`.
    pub target: String,
    /// Header `feature_bits` (0xC00 on trn2 samples).
    pub feature_bits: u64,
    /// Header NEFF format major version (2 for 2.21+, 1 before).
    pub major_version: u64,
    /// Store the MD5 word-swapped (compilers 2.18 – 2.23) instead of canonical.
    pub word_swapped_hash: bool,
    /// gzip MTIME (seconds since 1970).
    pub mtime: u32,
    /// Subgraphs `sg00`, `sg01`, … (their count is the header `lnc_size`).
    pub subgraphs: Vec<SubgraphSpec>,
    /// Extra members `(path, bytes)` written after the generated ones (e.g. `.dbg` files). A
    /// repeated path is written twice (readers let the last one win, neff.md §3.2).
    pub extra_members: Vec<(String, Vec<u8>)>,
    /// Precede every member with a PAX `x` header carrying `path` and times, as compiler 2.0
    /// does (neff.md §3.2); names over 100 bytes then live only in the PAX record. Otherwise
    /// plain ustar (GNU `L` long-name entries for names over 100 bytes, via the `tar` crate).
    pub pax: bool,
    /// Compress the archive as one gzip member (all compilers); `false` writes a raw tar
    /// payload (documented for `neuron-packager optimize`, neff.md §3.1).
    pub gzip: bool,
}

impl Default for NeffSpec {
    fn default() -> Self {
        NeffSpec {
            name: "synthetic.neff".into(),
            uuid: *b"neuronscope-demo",
            compiler_version: "2.23.6484.0+3b612583".into(),
            target: "cayman".into(),
            feature_bits: 0xC00,
            major_version: 2,
            word_swapped_hash: true,
            mtime: 0,
            subgraphs: vec![SubgraphSpec::default()],
            extra_members: Vec::new(),
            pax: false,
            gzip: true,
        }
    }
}

/// The engine stream file base for `engine` (neff.md §7.1).
fn file_base(engine: Engine) -> &'static str {
    match engine {
        Engine::Pe => "PE",
        Engine::Act => "Activation",
        Engine::Pool => "Pool",
        Engine::Dve => "DVE",
        Engine::Sp => "SP",
    }
}

fn pretty(v: &Value) -> Vec<u8> {
    serde_json::to_vec_pretty(v).unwrap_or_default()
}

fn def_json(sg: &SubgraphSpec) -> Value {
    let mut d = Map::new();
    d.insert("version".into(), json!("0.6"));
    d.insert("name".into(), json!("definition"));
    d.insert("#rank_world_size".into(), json!(0));
    for e in Engine::ALL {
        let (k, b) = (e.def_key(), file_base(e));
        d.insert(k.into(), json!(format!("{b}.json")));
        d.insert(format!("{k}_instr"), json!(format!("{b}.bin")));
        d.insert(
            format!("{k}_dbg"),
            json!([format!("debug_info_backend_{b}.dbg")]),
        );
        d.insert(
            format!("{k}_asm_dbg"),
            json!([format!("debug_info_asm_{b}.dbg")]),
        );
    }
    d.insert("dma_dbg".into(), json!(["debug_info_backend_DMA.dbg"]));
    let mut vars = Map::new();
    for v in &sg.vars {
        let mut o = Map::new();
        o.insert("type".into(), json!(v.kind));
        o.insert("ops".into(), json!([]));
        if let Some(x) = v.var_id {
            o.insert("var_id".into(), json!(x));
        }
        if let Some(x) = v.size {
            o.insert("size".into(), json!(x));
        }
        if let Some(x) = &v.file_name {
            o.insert("file_name".into(), json!(x));
        }
        if let Some(x) = v.backing_variable_off {
            o.insert("backing_variable_off".into(), json!(x));
        }
        vars.insert(v.name.clone(), Value::Object(o));
    }
    d.insert("var".into(), Value::Object(vars));
    let mut qs = Map::new();
    for q in &sg.dma_queues {
        let mut o = Map::new();
        o.insert("type".into(), json!(q.kind));
        o.insert("fabric_path".into(), json!("main"));
        if let Some(x) = &q.owner {
            o.insert("owner".into(), json!(x));
        }
        if let Some(x) = q.num_queues {
            o.insert("num_queues".into(), json!(x));
        }
        o.insert("semaphore_set".into(), json!(q.semaphore_set));
        qs.insert(q.name.clone(), Value::Object(o));
    }
    d.insert("dma_queue".into(), Value::Object(qs));
    d.insert("debug_info".into(), json!({}));
    d.insert("neff_features".into(), json!(["neff_feature_vnc"]));
    d.insert("runtime_event_count".into(), json!(12));
    d.insert("runtime_semaphore_count".into(), json!(3));
    Value::Object(d)
}

fn tensor_map_json(sg: &SubgraphSpec) -> Value {
    let mut m = Map::new();
    for t in &sg.tensors {
        let mut o = Map::new();
        if let Some(x) = &t.kind {
            o.insert("kind".into(), json!(x));
        }
        o.insert("is_const".into(), json!(t.is_const.unwrap_or(false)));
        if let Some(x) = &t.dtype {
            o.insert("dtype".into(), json!(x));
        }
        o.insert(
            "layer_name".into(),
            json!(t.layer_name.clone().unwrap_or_else(|| t.name.clone())),
        );
        if let Some(x) = &t.tf_format {
            o.insert("tf_format".into(), json!(x));
        }
        if let Some(x) = &t.sim_format {
            o.insert("sim_format".into(), json!(x));
        }
        o.insert("tf_shape".into(), json!(t.tf_shape));
        o.insert("sim_shape".into(), json!(t.sim_shape));
        if let Some(x) = &t.tf_file {
            o.insert("tf_file".into(), json!(x));
        }
        m.insert(t.name.clone(), Value::Object(o));
    }
    Value::Object(m)
}

fn neff_json(spec: &NeffSpec) -> Value {
    let inputs: Vec<&Var> = spec
        .subgraphs
        .first()
        .map(|s| s.vars.iter().filter(|v| v.kind == "input").collect())
        .unwrap_or_default();
    let mut nodes: Vec<Value> = inputs
        .iter()
        .map(|v| {
            json!({"op": "null", "name": v.name, "inputs": [], "output_names": [v.name],
                   "is_param": "0"})
        })
        .collect();
    let ins: Vec<Value> = (0..inputs.len()).map(|i| json!([i, 0, 0])).collect();
    nodes.push(json!({
        "op": "tvm_op", "name": "sg_core",
        "attrs": {"func_name": "__kelf", "flatten_data": "0",
                  "num_inputs": inputs.len().to_string(), "kelf": "kelf-0.json",
                  "num_outputs": "0"},
        "inputs": ins, "output_names": []
    }));
    json!({"nodes": nodes, "arg_nodes": (0..inputs.len()).collect::<Vec<_>>(), "heads": []})
}

/// One PAX extended-header record: `"<len> <key>=<value>\n"`, `len` counting itself.
fn pax_record(key: &str, value: &str) -> Vec<u8> {
    let body = format!(" {key}={value}\n");
    let mut n = body.len() + 1;
    while format!("{n}{body}").len() != n {
        n += 1;
    }
    format!("{n}{body}").into_bytes()
}

/// Copies up to 100 bytes of `name` into the header's name field (longer names are cut; the
/// PAX record carries the full path).
fn set_raw_name(h: &mut tar::Header, name: &str) {
    let field = &mut h.as_old_mut().name;
    field.fill(0);
    let b = name.as_bytes();
    let n = b.len().min(field.len());
    field[..n].copy_from_slice(&b[..n]);
}

/// Builds the bytes of a NEFF described by `spec` (header + gzip(ustar) + zero padding).
/// `crate::neff::open` reads it back with the same subgraphs, streams, vars and queues.
pub fn write_neff(spec: &NeffSpec) -> Vec<u8> {
    let mut members: Vec<(String, Vec<u8>)> = Vec::new();
    let mut info = Map::new();
    info.insert("tool_version".into(), json!(spec.compiler_version));
    info.insert("kelp_version".into(), json!("Dynamic"));
    info.insert("name".into(), json!(spec.name));
    info.insert("num_tpb".into(), json!(1));
    info.insert("num_tpb_requested".into(), json!(1));
    let mut per_node = vec![0u8; 64];
    per_node[0] = 1;
    info.insert("num_tpb_per_node".into(), json!(per_node));
    members.push(("info.json".into(), pretty(&Value::Object(info))));
    let graphs: Vec<Value> = (0..spec.subgraphs.len())
        .map(|i| json!({"definition": format!("sg{i:02}/def.json"), "name": format!("sg{i:02}")}))
        .collect();
    members.push((
        "kelf-0.json".into(),
        pretty(&json!({"graphs": graphs, "version": "0.5", "target": spec.target})),
    ));
    for (i, sg) in spec.subgraphs.iter().enumerate() {
        let dir = format!("sg{i:02}");
        for e in Engine::ALL {
            let ops: &[u8] = sg
                .engines
                .iter()
                .find(|(x, _)| *x == e)
                .map(|(_, o)| o.as_slice())
                .unwrap_or(&[]);
            let mut bin = vec![0u8; ops.len() * 64];
            for (slot, &op) in bin.chunks_mut(64).zip(ops) {
                slot[0] = op;
                slot[1] = 0x10;
            }
            members.push((format!("{dir}/{}.bin", file_base(e)), bin));
            members.push((
                format!("{dir}/{}.json", file_base(e)),
                pretty(&json!({"name": file_base(e), "instr": format!("{}.bin", file_base(e)), "dma": []})),
            ));
        }
        members.push((format!("{dir}/def.json"), pretty(&def_json(sg))));
        members.push((
            format!("{dir}/tensor_map.json"),
            pretty(&tensor_map_json(sg)),
        ));
    }
    members.extend(spec.extra_members.iter().cloned());
    members.push(("neff.json".into(), pretty(&neff_json(spec))));

    // ustar archive as compilers 2.16 – 2.23 write it (neff.md §3.2).
    let mut tar = tar::Builder::new(Vec::new());
    for (name, data) in &members {
        let mut h = tar::Header::new_ustar();
        h.set_mode(0o664);
        h.set_uid(1000);
        h.set_gid(1000);
        h.set_mtime(0);
        h.set_size(data.len() as u64);
        h.set_entry_type(tar::EntryType::Regular);
        // Writing into a Vec cannot fail; errors are ignored rather than unwrapped.
        if spec.pax {
            let mut rec = pax_record("path", name);
            rec.extend(pax_record("mtime", &format!("{}.25", spec.mtime)));
            rec.extend(pax_record("atime", &format!("{}.25", spec.mtime)));
            let mut x = tar::Header::new_ustar();
            x.set_entry_type(tar::EntryType::XHeader);
            x.set_mode(0o644);
            x.set_size(rec.len() as u64);
            set_raw_name(&mut x, &format!("PaxHeaders.0/{name}"));
            x.set_cksum();
            let _ = tar.append(&x, rec.as_slice());
            set_raw_name(&mut h, name);
            h.set_cksum();
            let _ = tar.append(&h, data.as_slice());
        } else {
            let _ = h.set_username("nobody");
            let _ = h.set_groupname("nobody");
            let _ = tar.append_data(&mut h, name, data.as_slice());
        }
    }
    let raw = tar.into_inner().unwrap_or_default();

    let mut payload = if spec.gzip {
        let mut gz = flate2::GzBuilder::new()
            .mtime(spec.mtime)
            .operating_system(3)
            .write(Vec::new(), flate2::Compression::default());
        let _ = gz.write_all(&raw);
        gz.finish().unwrap_or_default()
    } else {
        raw
    };
    let padded = payload.len().div_ceil(10240).max(1) * 10240;
    payload.resize(padded, 0);

    let digest: [u8; 16] = Md5::digest(&payload).into();
    let mut hash = digest;
    if spec.word_swapped_hash {
        for w in hash.chunks_mut(4) {
            w.reverse();
        }
    }
    let mut h = vec![0u8; HEADER_LEN];
    let put = |h: &mut [u8], o: usize, v: &[u8]| h[o..o + v.len()].copy_from_slice(v);
    put(&mut h, 0x000, &2u64.to_le_bytes());
    put(&mut h, 0x008, &(HEADER_LEN as u64).to_le_bytes());
    put(&mut h, 0x010, &(payload.len() as u64).to_le_bytes());
    put(&mut h, 0x018, &spec.major_version.to_le_bytes());
    put(&mut h, 0x020, &0u64.to_le_bytes());
    put(&mut h, 0x0A8, &1u32.to_le_bytes());
    put(&mut h, 0x0AC, &hash);
    put(&mut h, 0x0CC, &spec.uuid);
    let name = spec.name.as_bytes();
    put(&mut h, 0x0DC, &name[..name.len().min(255)]);
    put(&mut h, 0x1DC, &1u32.to_le_bytes());
    h[0x1E0] = 1;
    put(&mut h, 0x220, &spec.feature_bits.to_le_bytes());
    put(&mut h, 0x228, &(spec.subgraphs.len() as u32).to_le_bytes());
    h.extend_from_slice(&payload);
    h
}

/// One record of a synthetic `.dbg` file (neff.md §9.2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DbgRecordSpec {
    /// Field 1: id.
    pub id: u64,
    /// Field 2: name (BIR `inst.12`, HLO `%dot.3 = …`, framework layer).
    pub name: String,
    /// Field 3: parent ids, one level up the chain (packed varints).
    pub parents: Vec<u64>,
    /// Field 6: kind (1 – 3 seen; 0 = absent).
    pub kind: u64,
    /// Field 7: string attributes (`kernel_file`, `kernel_line`).
    pub attrs: Vec<(String, String)>,
}

/// A synthetic `.dbg` file (neff.md §9.1): asm files hold one record per 64-byte slot whose
/// parent is a backend (BIR) id; backend records point to Penguin ids, Penguin to HLO, HLO to
/// the framework layer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DbgFileSpec {
    /// Field 1: description.
    pub description: String,
    /// Field 2: parent file name (base name of the next file up the chain, or empty).
    pub parent: String,
    /// Field 4: engine number (neff.md §7.1), when set.
    pub engine: Option<u64>,
    /// Field 5: source-file table (`kernel_file` attributes index it).
    pub files: Vec<String>,
    /// Field 3: records in order.
    pub records: Vec<DbgRecordSpec>,
}

/// Encodes `f` with [`crate::pb`]'s writers; `crate::neff::debug::parse_dbg` reads it back.
pub fn encode_dbg(f: &DbgFileSpec) -> Vec<u8> {
    use crate::pb::{put_bytes, put_uint, put_varint};
    let mut out = Vec::new();
    if !f.description.is_empty() {
        put_bytes(&mut out, 1, f.description.as_bytes());
    }
    if !f.parent.is_empty() {
        put_bytes(&mut out, 2, f.parent.as_bytes());
    }
    if let Some(e) = f.engine {
        put_uint(&mut out, 4, e);
    }
    for s in &f.files {
        put_bytes(&mut out, 5, s.as_bytes());
    }
    for r in &f.records {
        let mut b = Vec::new();
        put_uint(&mut b, 1, r.id);
        put_bytes(&mut b, 2, r.name.as_bytes());
        if !r.parents.is_empty() {
            let mut packed = Vec::new();
            for &p in &r.parents {
                put_varint(&mut packed, p);
            }
            put_bytes(&mut b, 3, &packed);
        }
        if r.kind != 0 {
            put_uint(&mut b, 6, r.kind);
        }
        for (k, v) in &r.attrs {
            let mut kv = Vec::new();
            put_bytes(&mut kv, 1, k.as_bytes());
            put_bytes(&mut kv, 2, v.as_bytes());
            put_bytes(&mut b, 7, &kv);
        }
        put_bytes(&mut out, 3, &b);
    }
    out
}

/// Member names the NEFF writer lists in `def.json` for engine `engine`'s debug files:
/// (`sgNN/debug_info_asm_<Base>.dbg`, `sgNN/debug_info_backend_<Base>.dbg`).
pub fn engine_dbg_members(subgraph: usize, engine: Engine) -> (String, String) {
    let b = file_base(engine);
    (
        format!("sg{subgraph:02}/debug_info_asm_{b}.dbg"),
        format!("sg{subgraph:02}/debug_info_backend_{b}.dbg"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neff::debug::{parse_dbg, Interner};

    /// `encode_dbg` output reads back field for field (neff.md §9.1 – §9.2).
    #[test]
    fn dbg_roundtrip() {
        let spec = DbgFileSpec {
            description: "backend".into(),
            parent: "debug_info_penguin.dbg".into(),
            engine: Some(3),
            files: vec!["a.py".into(), "b.py".into()],
            records: vec![
                DbgRecordSpec {
                    id: 300,
                    name: "inst.300".into(),
                    parents: vec![1017, 5],
                    kind: 1,
                    attrs: vec![
                        ("kernel_file".into(), "1".into()),
                        ("kernel_line".into(), "17".into()),
                    ],
                },
                DbgRecordSpec {
                    id: 301,
                    name: "inst.301".into(),
                    ..Default::default()
                },
            ],
        };
        let mut s = Interner::default();
        let (f, sfi, fault) = parse_dbg(&encode_dbg(&spec), "m.dbg", &mut s);
        assert!(fault.is_none() && sfi.is_none());
        assert_eq!(f.description, "backend");
        assert_eq!(f.parent, "debug_info_penguin.dbg");
        assert_eq!(f.engine, Some(3));
        let files: Vec<&str> = f.files.iter().map(|&x| s.get(x)).collect();
        assert_eq!(files, ["a.py", "b.py"]);
        assert_eq!(f.records.len(), 2);
        let r = f.by_id(300).unwrap();
        assert_eq!(s.get(r.name), "inst.300");
        assert_eq!(r.kind, 1);
        assert_eq!(f.parents(r), [1017, 5]);
        assert_eq!(f.attr(&s, r, "kernel_line"), Some("17"));
        assert_eq!(f.attr(&s, r, "kernel_file"), Some("1"));
        let r = f.by_id(301).unwrap();
        assert!(f.parents(r).is_empty() && f.attrs(r).is_empty());
    }
}
