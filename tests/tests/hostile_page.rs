//! What a page may try against the channel between the page hook and the extension.

use serde_json::json;
use unmodal_e2e::Session;

// The first inline script: listens for the hand-over and tries to forge reports and config.
const PAGE: &str = r#"<!doctype html><title>hostile</title>
<script>
  window.heard = [];
  for (const name of ['unmodal:hello', 'unmodal', 'hello']) {
    document.addEventListener(name, (e) => heard.push(name + ':' + String(e.detail)), true);
  }
  window.forge = () => {
    const fake = { seq: 1, phase: 'decided', kind: 'confirm', message: 'forged', decided_by: 'rule', rules_loaded: true, accepted: true };
    // Re-key attempt: offer a secret of our own, then "report" and "configure" on it.
    document.dispatchEvent(new CustomEvent('unmodal:hello', { detail: 'uabcdef' }));
    document.dispatchEvent(new CustomEvent('uabcdefi', { detail: fake }));
    document.dispatchEvent(new CustomEvent('uabcdefm', { detail: 'U1E1' }));
    for (let i = 0; i < 50; i++) document.dispatchEvent(new CustomEvent('u' + i.toString(36) + 'i', { detail: fake }));
  };
</script>"#;

#[tokio::test(flavor = "multi_thread")]
async fn page_can_neither_read_nor_forge_the_channel() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/hostile", PAGE).await?;
    s.page_value("forge()").await?;
    // The forged "rule" did not reach the host, and a real dialog still goes through.
    assert_eq!(s.page_value("confirm('real')").await?, json!(false));
    let d = s.last_dialog(1).await?;
    let all = s.dialogs().await?;
    assert_eq!(all["recent_dialogs"].as_array().map(Vec::len), Some(1), "{all}");
    assert_eq!((d["message"].as_str(), d["decided_by"].as_str()), (Some("real"), Some("default_policy")));
    assert_eq!(
        s.page_value("heard.filter((h) => !h.includes('uabcdef'))").await?,
        json!([]),
        "the page saw the hand-over"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_and_odd_arguments_are_cut_and_converted() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/odd", "<!doctype html><title>odd</title>").await?;
    let v = s
        .page_value(
            "[confirm('é'.repeat(100000)), confirm(null), confirm(), prompt(undefined, undefined), alert(1, 2, 3)]",
        )
        .await?;
    assert_eq!(v, json!([false, false, false, null, null]));
    let all = s.last_dialog(5).await.and(s.dialogs().await)?;
    let r = all["recent_dialogs"].as_array().unwrap();
    assert_eq!(r[0]["message"].as_str().unwrap().chars().count(), 4096);
    assert_eq!(r[0]["message_truncated"], true);
    let msgs: Vec<_> = r[1..].iter().map(|d| d["message"].as_str().unwrap_or("?")).collect();
    assert_eq!(msgs, ["null", "", "", "1"]);
    assert_eq!(r[3]["default_text"], "");
    Ok(())
}

// The first inline script replaces what the engine is built from, and spies on it.
const POISON: &str = r#"<!doctype html><title>poison</title>
<script>
  window.spied = [];
  const spy = (obj, key) => { const orig = obj[key]; obj[key] = function (...a) { spied.push(key); return Reflect.apply(orig, this, a); }; };
  spy(String.prototype, 'charCodeAt'); spy(Math, 'imul'); spy(Math, 'clz32'); spy(Object, 'create'); spy(Reflect, 'apply');
  window.Uint16Array = function () { spied.push('Uint16Array'); };
  window.Error = function () { spied.push('Error'); };
</script>"#;

#[tokio::test(flavor = "multi_thread")]
async fn engine_built_after_page_scripts_uses_only_pristine_globals() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/poison", POISON).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "prompt", "text": "clean"}))
        .await?;
    // The first dialog of this document builds the engine.
    assert_eq!(s.page_value("prompt('Build now?')").await?, json!("clean"));
    assert_eq!(s.page_value("spied").await?, json!([]), "the page saw the engine being built or used");
    Ok(())
}

// Property-descriptor fields on Object.prototype: any descriptor object that inherits from
// it becomes invalid (`get` beside `value`) or tells the page it was read.
const DESCRIPTOR_TRAPS: &str = r#"<!doctype html><title>descriptors</title>
<script>
  window.caught = '';
  for (const key of ['get', 'set', 'writable']) {
    Object.defineProperty(Object.prototype, key, { configurable: true, get() { caught += key + ' '; return undefined; } });
  }
  caught = ''; // the page's own defineProperty calls above read the traps set before them
</script>"#;

#[tokio::test(flavor = "multi_thread")]
async fn descriptor_fields_on_object_prototype_neither_break_nor_see_the_hook() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/descriptors", DESCRIPTOR_TRAPS).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "prompt", "text": "fine"}))
        .await?;
    // The first dialog builds the engine (its memory object is made with descriptors).
    assert_eq!(s.page_value("prompt('Build now?')").await?, json!("fine"));
    // An error shaped like the native's (its stack re-written through a descriptor).
    let err = s.page_value("try { alert(Symbol()); 'no error' } catch (e) { [e.constructor.name, e.message] }").await?;
    assert_eq!(
        err,
        json!(["TypeError", "Failed to execute 'alert' on 'Window': Cannot convert a Symbol value to a string"])
    );
    assert_eq!(s.page_value("caught").await?, json!(""), "the page saw the hook read a descriptor");
    Ok(())
}

// A page that sets traps on the prototypes of its own realm, where a careless hook would
// put a report or read a setting.
const TRAPS: &str = r#"<!doctype html><title>traps</title>
<script>
  window.caught = ''; // a string: an array here would trip the page's own traps
  for (const proto of [Array.prototype, Object.prototype]) {
    for (const key of ['0', '1', 'length', 'reports', 'folded', 'message', 'decided_by']) {
      if (proto === Array.prototype && key === 'length') continue;
      Object.defineProperty(proto, key, {
        configurable: true,
        get() { caught += 'get ' + key + '; '; return undefined; },
        set(v) { caught += 'set ' + key + ' ' + (v && v.message) + '; '; },
      });
    }
  }
</script>"#;

#[tokio::test(flavor = "multi_thread")]
async fn prototype_traps_neither_see_nor_swallow_reports() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/traps", TRAPS).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "accept": true}))
        .await?;
    assert_eq!(s.page_value("confirm('Delete the draft?')").await?, json!(true));
    // The report reached the host (and spent the once-rule there), and no trap fired.
    let d = s.last_dialog(1).await?;
    assert_eq!((d["message"].as_str(), d["decided_by"].as_str()), (Some("Delete the draft?"), Some("rule")), "{d}");
    assert_eq!(s.page_value("caught").await?, json!(""), "the page's traps saw the hook at work");
    Ok(())
}

// After the hook installed itself, the page replaces every global a careless hook would
// call at dialog time; each replacement notes that it ran.
const SPIES: &str = r#"<!doctype html><title>spies</title>
<script>
  window.spied = '';
  const note = (k) => { spied += k + '; '; };
  const define = Object.defineProperty;
  const wrap = (obj, key, name) => {
    const orig = obj[key];
    define(obj, key, {
      configurable: true, writable: true,
      value: function (...a) { note(name); return Reflect.apply(orig, this, a); },
    });
  };
  wrap(Array.prototype, 'push', 'push');
  wrap(Array.prototype, Symbol.iterator, 'Symbol.iterator');
  wrap(Array.prototype, 'slice', 'slice');
  wrap(String.prototype, 'slice', 'String.slice');
  wrap(String.prototype, 'indexOf', 'indexOf');
  wrap(Function.prototype, 'call', 'call');
  wrap(Function.prototype, 'apply', 'apply');
  wrap(Function.prototype, 'bind', 'bind');
  wrap(Object, 'defineProperty', 'defineProperty');
  wrap(Object, 'getOwnPropertyDescriptor', 'getOwnPropertyDescriptor');
  wrap(JSON, 'stringify', 'stringify');
  wrap(EventTarget.prototype, 'dispatchEvent', 'dispatchEvent');
  wrap(EventTarget.prototype, 'addEventListener', 'addEventListener');
  wrap(Error, 'captureStackTrace', 'captureStackTrace');
  wrap(window, 'queueMicrotask', 'queueMicrotask');
  window.CustomEvent = function () { note('CustomEvent'); };
  Error.prepareStackTrace = (e, frames) => { note('prepareStackTrace'); return 'stack'; };
</script>"#;

#[tokio::test(flavor = "multi_thread")]
async fn globals_replaced_after_start_are_never_called_by_the_hook() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/spies", SPIES).await?;
    s.agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "prompt", "text": "typed", "match": {"message_contains": "name"}}),
        )
        .await?;
    let answers = s
        .page_value(
            "[alert('one'), confirm('two'), prompt('Your name?', 'x'), \
             (() => { try { confirm(Symbol('s')); } catch (e) { return e instanceof TypeError; } })()]",
        )
        .await?;
    assert_eq!(answers, json!([null, false, "typed", true]));
    // The reports went out (after the task) and reached the host.
    let all = s.last_dialog(3).await.and(s.dialogs().await)?;
    let got: Vec<_> = all["recent_dialogs"].as_array().unwrap().iter().map(|d| d["message"].clone()).collect();
    assert_eq!(got, [json!("one"), json!("two"), json!("Your name?")]);
    assert_eq!(s.page_value("spied").await?, json!(""), "the hook called page-replaced globals");
    Ok(())
}

// The secret crosses between the worlds at the head of window.status: the page's first
// script, a script-made frame and a same-origin frame sandboxed without scripts (where
// only the isolated world could run) must all find the page's own value there.
const STATUS: &str = r#"<!doctype html><title>status</title>
<script>
  window.firstStatus = window.status;
  window.status = 'page-set';
</script>
<iframe id="nosc" sandbox="allow-same-origin" srcdoc="<p>no scripts here</p>"></iframe>
<script>
  const f = document.createElement('iframe');
  document.body.append(f);
  window.madeStatus = f.contentWindow.status;
</script>"#;

#[tokio::test(flavor = "multi_thread")]
async fn window_status_keeps_no_trace_of_the_hand_over() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/status", STATUS).await?;
    let seen = unmodal_e2e::eventually(std::time::Duration::from_secs(10), "the sandboxed frame loaded", || async {
        let v = s
            .page_value(
                "(() => { const d = document.getElementById('nosc').contentDocument; \
                 return d && d.readyState === 'complete' && d.body && d.body.textContent === 'no scripts here' \
                 ? [firstStatus, madeStatus, status, document.getElementById('nosc').contentWindow.status] : null; })()",
            )
            .await?;
        Ok((!v.is_null()).then_some(v))
    })
    .await?;
    assert_eq!(seen, json!(["", "", "page-set", ""]));
    // The channel works all the same.
    assert_eq!(s.page_value("confirm('after')").await?, json!(false));
    let d = s.last_dialog(1).await?;
    assert_eq!(d["message"].as_str(), Some("after"));
    Ok(())
}

// The hook asks the page's other frames whether one is going away (Chromium then shows no
// dialog in any): it reads each window's frames below its own `length`, never past it, where
// the page's `Object.prototype` answers. The page traps indices, `Event.prototype.type` and,
// in a second document, `window.length` itself before the first dialog.
const FRAME_WALK: &str = r#"<!doctype html><title>frames</title>
<iframe srcdoc="<p>a"></iframe><iframe srcdoc="<p>b"></iframe>
<script>
  window.caught = '';
  for (const k of ['0', '1', '2', '3']) {
    Object.defineProperty(Object.prototype, k, { configurable: true, get() { caught += 'index ' + k + '; '; } });
  }
  Object.defineProperty(Event.prototype, 'type', { configurable: true, get() { caught += 'type; '; return 'pagehide'; } });
  if (location.search === '?length') {
    Object.defineProperty(window, 'length', { configurable: true, get() { caught += 'length; '; return 4; } });
  }
</script>"#;

#[tokio::test(flavor = "multi_thread")]
async fn the_walk_over_the_pages_frames_reads_nothing_the_page_controls() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/frames", FRAME_WALK).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false}))
        .await?;
    let answer = "[confirm('top?'), frames[0].confirm('frame?'), frames[1].confirm('other frame?')]";
    for path in ["/frames", "/frames?length"] {
        s.page.goto(&format!("{}{path}", s.web.origin)).await?;
        // Inside a real event handler too: the page's own `click`, not a going-away event.
        let v = s
            .page_value(&format!(
                "(() => {{ let r; addEventListener('click', () => r = {answer}, {{ once: true }}); \
                                        document.body.click(); return r; }})()"
            ))
            .await?;
        assert_eq!(v, json!([true, true, true]), "{path}: the rule answers, nothing is taken as going away");
        assert_eq!(s.page_value("caught").await?, json!(""), "{path}: the page's traps saw the hook at work");
    }
    Ok(())
}
