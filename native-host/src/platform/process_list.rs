//! The process list where there is no `/proc` (macOS, Windows): `sysinfo`.

pub fn command_lines() -> Option<Vec<(u32, Vec<String>)>> {
    use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, UpdateKind};
    let mut sys = sysinfo::System::new();
    let kind = ProcessRefreshKind::nothing().with_cmd(UpdateKind::Always);
    if sys.refresh_processes_specifics(ProcessesToUpdate::All, true, kind) == 0 {
        return None;
    }
    let all = sys.processes().iter().filter_map(|(pid, p)| {
        let args: Vec<String> = p.cmd().iter().map(|a| a.to_string_lossy().into_owned()).collect();
        (!args.is_empty()).then_some((pid.as_u32(), args))
    });
    Some(all.collect())
}
