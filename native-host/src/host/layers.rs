//! The host's files import each other in layers, never in a circle: the low modules (what
//! goes on the wire, records, the rule store, logs, the sites open) import no handler,
//! `state.rs` imports only those, and each handler imports what is below it. This test reads the imports
//! (`super::x` and `crate::host::x` outside tests) of every file under `host/`, the
//! folder `kinds/` as one; `mod.rs`, the runtime's root (`Shared`, the loops), is above
//! them all.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Imports nothing but each other: what a new kind may add to without touching handlers.
const LOW: [&str; 7] = ["protocol", "record", "rules", "logs", "kind_state", "sites", "answerer"];

fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let host = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/host");
    let mut files: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // Each file of `host/` is a node; the folder `kinds/` (a file or a folder per kind, and
    // its registry) is one node, `kinds`, whose `super::` is itself. A kind's own folder
    // names the host's modules as `crate::host::x`.
    let mut sources = Vec::new();
    let mut dirs =
        vec![(host.clone(), None), (host.join("kinds"), Some("kinds")), (host.join("answerer"), Some("answerer"))];
    while let Some((dir, folder)) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a host directory") {
            let path = entry.expect("a directory entry").path();
            if folder.is_some() && path.is_dir() {
                dirs.push((path, folder));
                continue;
            }
            let Some(stem) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else { continue };
            if path.extension().is_none_or(|e| e != "rs") || (folder.is_none() && stem == "mod") {
                continue;
            }
            // A test module's own file (`tests.rs`, `picks_tests.rs`) is test code whole.
            if folder.is_some() && (stem == "tests" || stem.ends_with("_tests")) {
                continue;
            }
            sources.push((folder.map_or(stem, str::to_owned), folder.is_some(), path));
        }
    }
    for (name, in_folder, path) in sources {
        let text = std::fs::read_to_string(&path).expect("a source file");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let deps = files.entry(name.clone()).or_default();
        let prefixes: &[&str] =
            if in_folder { &["super::super::", "crate::host::"] } else { &["super::", "crate::host::"] };
        for line in code.lines().map(str::trim).filter(|l| !l.starts_with("//")) {
            for prefix in prefixes {
                for (at, _) in line.match_indices(prefix) {
                    let rest = &line[at + prefix.len()..];
                    let dep: String = rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
                    // `super::{a, b}` lists modules too.
                    let listed = rest.strip_prefix('{').map(|l| l.split('}').next().unwrap_or_default());
                    for d in
                        listed.map_or_else(|| vec![dep.clone()], |l| l.split(',').map(|s| s.trim().into()).collect())
                    {
                        let d: String = d.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
                        if !d.is_empty() && d != name && !(in_folder && *prefix == "super::super::" && d == "super") {
                            deps.insert(d);
                        }
                    }
                }
            }
        }
    }
    files
}

/// A circle through `at`, if one is reachable from it.
fn circle(
    g: &BTreeMap<String, BTreeSet<String>>,
    at: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(i) = path.iter().position(|p| p == at) {
        let mut c = path[i..].to_vec();
        c.push(at.to_owned());
        return Some(c);
    }
    if !done.insert(at.to_owned()) {
        return None;
    }
    path.push(at.to_owned());
    for d in g.get(at).into_iter().flatten() {
        if let Some(c) = circle(g, d, path, done) {
            return Some(c);
        }
    }
    path.pop();
    None
}

#[test]
fn the_host_has_no_import_circle() {
    let g = imports();
    assert!(g.len() > 20, "read the host's files: {:?}", g.keys());
    assert!(g.get("kinds").is_some_and(|d| d.contains("protocol")), "read kinds/: {:?}", g.get("kinds"));
    for name in g.keys() {
        let mut done = BTreeSet::new();
        if let Some(c) = circle(&g, name, &mut Vec::new(), &mut done) {
            panic!("an import circle in native-host/src/host/: {}", c.join(" → "));
        }
    }
}

#[test]
fn the_low_modules_import_no_handler() {
    let g = imports();
    for low in LOW {
        let above: Vec<_> = g[low].iter().filter(|d| !LOW.contains(&d.as_str())).collect();
        assert!(above.is_empty(), "{low}.rs imports {above:?}, which sit above it");
    }
    let state: Vec<_> = g["state"].iter().filter(|d| !LOW.contains(&d.as_str())).collect();
    assert!(state.is_empty(), "state.rs imports {state:?}: the state holds only low types");
}

#[test]
fn the_check_sees_a_circle() {
    let mut g = imports();
    g.get_mut("record").expect("record.rs").insert("state".into());
    assert!(circle(&g, "state", &mut Vec::new(), &mut BTreeSet::new()).is_some());
}
