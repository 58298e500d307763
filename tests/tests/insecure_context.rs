//! An http: page on a host that is not localhost is not a secure context: members such as
//! `crypto.randomUUID` are missing there. The page hook must work all the same.

use serde_json::json;
use unmodal_e2e::Session;
use unmodal_e2e::browser::Options;

#[tokio::test(flavor = "multi_thread")]
async fn the_hook_works_in_a_page_that_is_not_a_secure_context() -> anyhow::Result<()> {
    let s = Session::start_with(Options {
        args: vec!["--host-resolver-rules=MAP insecure.test 127.0.0.1".into()],
        ..Options::default()
    })
    .await?;
    let local = s.web.page("/plain", "<!doctype html><title>plain</title><body></body>", &[]);
    let url = local.replace("127.0.0.1", "insecure.test");
    s.page.goto(&url).await?;
    s.page.bring_to_front().await?;
    s.agent.wait_for_tab(&url).await?;
    s.enable_pilot().await?;
    assert_eq!(s.page.eval("isSecureContext").await?, json!(false));
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false}))
        .await?;
    // The rule answers (a native dialog would block this evaluation): the hook ran.
    assert_eq!(s.page.eval("confirm('insecure?')").await?, json!(true));
    let d = s.last_dialog_where(1, |d| d["message"] == "insecure?").await?;
    assert_eq!(d["decided_by"], json!("rule"), "{d}");
    Ok(())
}
