//! A System profile decoded from files held in memory (the tests' own writers' output), for the
//! tests of bounded and damaged system inputs.

use std::collections::BTreeMap;

use neuronscope::inventory::{Profile, ProfileType};
use neuronscope::system::{self, SystemReport};
use neuronscope::tables::Tables;
use neuronscope::{ByteSource, Result};

/// `system::process` over `files` (path under `dir` → bytes), `dir` named as the runtime names
/// a capture directory (`<instance id>_pid_<pid>`, which gives the profile's instance and pid):
/// its report and its tables.
pub fn run(dir: &str, files: &BTreeMap<String, Vec<u8>>) -> (SystemReport, Tables) {
    let (instance, pid) = dir
        .rsplit_once("_pid_")
        .expect("dir is <instance>_pid_<pid>");
    let profile = Profile {
        id: dir.into(),
        profile_type: ProfileType::System,
        root: dir.into(),
        instance_id: Some(instance.into()),
        pid: Some(pid.parse().expect("pid is a number")),
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
