//! A test hook on the private socket (`Tool::TestAnswerer`): drives the CDP answerer's
//! interface directly, before the kinds use it (issue 51). Served only where the host's
//! environment says `UNMODAL_TEST_ANSWERER=1` (the end-to-end tests' browsers); refused
//! everywhere else. It goes through the same gate as the kinds will: a pick needs the
//! pilot on (`PilotOn` from the state's switch) and the answerer's own flag.

use super::Shared;
use super::answerer::{PilotOn, Want, Which};
use crate::reply::{ErrorCode, ToolError};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

pub fn enabled() -> bool {
    std::env::var_os("UNMODAL_TEST_ANSWERER").is_some_and(|v| v == "1")
}

fn bad(why: impl std::fmt::Display) -> ToolError {
    ToolError::new(ErrorCode::BadRequest, why.to_string())
}

pub async fn run(shared: &Shared, args: Value) -> Result<Value, ToolError> {
    if !enabled() {
        return Err(bad("no such tool"));
    }
    let (answerer, gate) = {
        let s = shared.state();
        (s.answerer.clone(), PilotOn::of(s.pilot))
    };
    let n = args["prompt"].as_u64().unwrap_or(0);
    let picked = |r: Result<(), super::answerer::PickError>| {
        r.map(|()| json!({"picked": true})).map_err(|e| ToolError::new(ErrorCode::AnswerFailed, e.to_string()))
    };
    match args["op"].as_str().unwrap_or_default() {
        "want" => {
            let want = Want { devices: args["devices"] == true, accounts: args["accounts"] == true, ..Want::NONE };
            let mut s = shared.state();
            s.answer_want = want;
            shared.send(&s, Vec::new());
            Ok(json!({"held": answerer.held()}))
        }
        // Until a page or frame at `url` is covered for `which`, or a prompt of it is open.
        "wait" => {
            let which = if args["which"] == "accounts" { Which::Accounts } else { Which::Devices };
            let url = args["url"].as_str().unwrap_or_default();
            let until = Instant::now() + Duration::from_secs(10);
            loop {
                let open: Vec<_> = answerer.prompts().into_iter().filter(|p| p.which == which).collect();
                let ready = match args["for"].as_str() {
                    Some("covered") => answerer.covers(url, which),
                    Some("devices") => {
                        let k = usize::try_from(args["count"].as_u64().unwrap_or(1)).unwrap_or(1);
                        open.iter().any(|p| p.devices.len() >= k)
                    }
                    _ => !open.is_empty(),
                };
                if ready {
                    return Ok(json!({"prompts": open, "held": answerer.held()}));
                }
                if Instant::now() >= until {
                    return Err(ToolError::new(ErrorCode::HostTimeout, format!("not seen: {args}")));
                }
                answerer.next_change(Duration::from_millis(100)).await;
            }
        }
        "prompts" => Ok(json!({"prompts": answerer.prompts(), "held": answerer.held()})),
        // Whether a page or frame at `url` is covered now, and whether the answerer attaches
        // for `which` at all (no wait: what it attaches for is set once `want` answered, so a
        // test checks "nothing attached, pilot off" without a timeout).
        "covers" => {
            let which = if args["which"] == "accounts" { Which::Accounts } else { Which::Devices };
            Ok(json!({
                "covered": answerer.covers(args["url"].as_str().unwrap_or_default(), which),
                "attaching": answerer.attaching().has(which),
            }))
        }
        "watch_downloads" => {
            answerer.watch_transfers(args["on"] == true);
            let until = Instant::now() + Duration::from_secs(10);
            while answerer.transfers_watched() != (args["on"] == true) && Instant::now() < until {
                answerer.next_change(Duration::from_millis(100)).await;
            }
            Ok(json!({"watched": answerer.transfers_watched()}))
        }
        // Until downloads are reported to the host's connection, by what the kinds want.
        "downloads_watched" => {
            let until = Instant::now() + Duration::from_secs(10);
            while !answerer.transfers_watched() && Instant::now() < until {
                answerer.next_change(Duration::from_millis(100)).await;
            }
            Ok(json!({"watched": answerer.transfers_watched()}))
        }
        // Until a download is in a final state.
        "downloads" => {
            let until = Instant::now() + Duration::from_secs(10);
            loop {
                let list = answerer.transfers_seen();
                if list.iter().any(|d| d.state != "in_progress") || Instant::now() >= until {
                    return Ok(json!({"downloads": list}));
                }
                answerer.next_change(Duration::from_millis(100)).await;
            }
        }
        // Until a kind has settled something the host's connection heard (the download
        // kind: a finished download paired with the worker's record, or recorded as a
        // driver's): the barrier after which a second record of it could only be a defect.
        "settled" => {
            let until = Instant::now() + Duration::from_secs(10);
            loop {
                let settled = super::kinds::answerer_settled(&shared.state());
                if !settled.is_empty() || Instant::now() >= until {
                    return Ok(Value::Object(settled));
                }
                answerer.next_change(Duration::from_millis(100)).await;
            }
        }
        "select_device" => {
            let gate = gate.ok_or_else(|| ToolError::new(ErrorCode::AnswerFailed, "the pilot is off"))?;
            picked(answerer.select_device(&gate, n, args["device_id"].as_str().unwrap_or_default()).await)
        }
        "select_account" => {
            let gate = gate.ok_or_else(|| ToolError::new(ErrorCode::AnswerFailed, "the pilot is off"))?;
            picked(answerer.select_account(&gate, n, args["account_id"].as_str().unwrap_or_default()).await)
        }
        op => Err(bad(format!("unknown op {op:?}"))),
    }
}
