//! A System profile decoded from files held in memory (the tests' own writers' output), for the
//! tests of bounded and damaged system inputs.

use std::collections::BTreeMap;

use neuronscope::inventory::{Profile, ProfileType};
use neuronscope::system::{self, SystemReport};
use neuronscope::tables::Tables;
use neuronscope::{ByteSource, Result};

/// The capture directory the files are placed in (instance id and pid as the runtime names it).
pub const DIR: &str = "i-0123456789abcdef0_pid_4242";

/// `system::process` over `files` (path under [`DIR`] → bytes): its report and its tables.
pub fn run(files: &BTreeMap<String, Vec<u8>>) -> (SystemReport, Tables) {
    let profile = Profile {
        id: DIR.into(),
        profile_type: ProfileType::System,
        root: DIR.into(),
        instance_id: Some("i-0123456789abcdef0".into()),
        pid: Some(4242),
        devices: Vec::new(),
        system_files: files.keys().cloned().collect(),
        other_files: Vec::new(),
        problems: Vec::new(),
    };
    let open = |p: &str| -> Result<Box<dyn ByteSource>> {
        Ok(Box::new(files.get(p).cloned().unwrap_or_default()))
    };
    let mut t = Tables::default();
    let rep = system::process(&profile, &open, &mut t, &mut |_, _, _| {}).expect("sink");
    (rep, t)
}
