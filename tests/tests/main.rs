//! The end-to-end tests, one binary (`autotests = false` in tests/Cargo.toml): one link
//! instead of one per file, and one process, so cargo runs them all in parallel rather than
//! file after file. Each file stays a module of its own; a new file in this directory needs
//! a `mod` line here, or it is never built.
//!
//! Run one file's tests with a filter: `cargo test -p unmodal-e2e --test e2e restarts::`.
//! Browsers are shared out by `unmodal_e2e::browser::slot` (`UNMODAL_TEST_BROWSERS`).

mod agent_api;
mod answerer;
mod app_links;
mod beforeunload;
mod browser_use;
mod call_cli;
mod choosers;
mod choosers_stealth;
mod config_clear;
mod conformance;
mod conformance_kinds;
mod csp_frames;
mod device_chooser;
mod device_picks;
mod device_picks_battery;
mod docs_examples;
mod docs_links;
mod downloads;
mod driver_downloads;
mod extension_zip;
mod eye_dropper;
mod file_chooser;
mod flood;
mod host_process;
mod hostile_page;
mod http_auth;
mod insecure_context;
mod kind_floods;
mod match_rules;
mod must_respond;
mod must_respond_edges;
mod one_command;
mod opener;
mod passkeys;
mod payment;
mod peers;
mod permissions;
mod pilot;
mod pilot_cli_wait;
mod pilot_consent;
mod pilot_execute;
mod pilot_highlight;
mod pilot_state;
mod popup_headful;
mod print;
mod redaction;
mod remote;
mod remote_kinds;
mod remote_standin;
mod restarts;
mod rules;
mod setup_help;
mod sign_in;
mod sign_in_battery;
mod sign_in_picks;
mod squatted_runtime;
mod stagehand;
mod startup;
mod stealth;
mod storage_access;
mod tabs_navigation;
mod tracked_tab;
mod trust;
mod two_browsers;
