//! Chromium and its helper processes (zygotes, renderers, GPU, network service) as one
//! process group, so that a test kills them all at once and knows they are gone before its
//! profile directory is removed.
//!
//! Killing only the browser process left the helpers running until each noticed, and a
//! helper still writing into the profile made `TempDir`'s removal fail in silence: the
//! directory stayed behind (seen in a fresh-clone run at 8f5e811).

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::Duration;

/// Starts `cmd` as the leader of a new process group; Chromium's helpers join it.
pub fn spawn(cmd: &mut Command) -> std::io::Result<Child> {
    cmd.process_group(0).spawn()
}

/// Kills the whole group and waits (up to 10 s) until no member of it runs any more.
/// Zombies count as gone: PID 1 of a container may never reap them.
pub fn kill(child: &mut Child) {
    let group = child.id() as libc::pid_t;
    // SAFETY: killpg only sends a signal; `group` is the group this child leads.
    unsafe { libc::killpg(group, libc::SIGKILL) };
    let _ = child.kill();
    let _ = child.wait();
    crate::wait::blocking_until(Duration::from_secs(10), || live_members(group) == 0);
}

/// How many processes of `group` are alive (not zombies), read from `/proc/<pid>/stat`.
fn live_members(group: libc::pid_t) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    dir.flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // `pid (comm) state ppid pgrp ...`; comm may hold spaces or parentheses.
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { return false };
            let mut fields = rest.split_whitespace();
            let state = fields.next();
            let pgrp = fields.nth(1).and_then(|f| f.parse::<libc::pid_t>().ok());
            pgrp == Some(group) && state != Some("Z") && state != Some("X")
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_group_has_no_member_left() {
        // A shell whose own child outlives it unless the whole group goes.
        let mut child = spawn(Command::new("sh").args(["-c", "sleep 30 & sleep 30"])).unwrap();
        let group = child.id() as libc::pid_t;
        let both = crate::wait::blocking_until(Duration::from_secs(10), || live_members(group) >= 2);
        assert!(both, "the shell and its child never both ran");
        kill(&mut child);
        assert_eq!(live_members(group), 0);
    }
}
