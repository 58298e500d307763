//! Secrets a page puts in a dialog are redacted before the host stores them or anything
//! shows them: observe, logs, the popup. Patterns are configurable.

use serde_json::json;
use std::time::Duration;
use unmodal_e2e::browser::Options;
use unmodal_e2e::{Session, eventually};

#[tokio::test(flavor = "multi_thread")]
async fn secrets_never_leave_the_host_unredacted() -> anyhow::Result<()> {
    let config = tempfile::NamedTempFile::new()?;
    std::fs::write(config.path(), r#"{"redact": {"patterns": [{"name": "employee_id", "regex": "EMP-\\d{6}"}]}}"#)?;
    let env = vec![("UNMODAL_CONFIG".to_string(), config.path().display().to_string())];
    let s = Session::start_with(Options { env, ..Options::default() }).await?;
    s.open("/redact", "<!doctype html><title>redact</title>", &[]).await?;
    s.enable_pilot().await?;
    s.page_value("confirm('Charge 4111 1111 1111 1111 for ada@example.com (EMP-004211)? Your password: hunter22')")
        .await?;
    let d = s.last_dialog(1).await?;
    assert_eq!(
        d["message"],
        "Charge [redacted:card_number] for [redacted:email] ([redacted:employee_id])? Your password: [redacted:password]"
    );
    assert_eq!(d["redacted"], json!(["email", "password", "card_number", "employee_id"]));
    let logs = s.agent.ok("observe", json!({"what": "logs"})).await?;
    let popup = s.open_popup().await?;
    // The popup fills itself in once the worker answered.
    eventually(Duration::from_secs(10), "the popup listing the dialog", || async {
        Ok((popup.eval("document.querySelectorAll('#recent li:not(.empty)').length").await? != json!(0)).then_some(()))
    })
    .await?;
    let shown = popup.eval("document.getElementById('recent').textContent").await?;
    for text in [logs.to_string(), shown.to_string(), d.to_string()] {
        // The whole card number: "4111" alone is also in a page server's port now and then.
        for secret in ["4111 1111 1111 1111", "ada@example.com", "EMP-004211", "hunter22"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
    }
    assert!(shown.as_str().unwrap().contains("[redacted:email]"), "{shown}");
    Ok(())
}
