'use strict';
// The toolbar popup: shows the pilot switch as the host keeps it (the worker caches it) and
// asks the worker to flip it. Where a program can control the browser, only
// `unmodal pilot on` in a terminal switches it on, and the popup says so.
const $ = (id) => document.getElementById(id);

// Shows `text`, with its `backquoted` parts as code (never as HTML).
function say(text) {
  const why = $('why');
  why.replaceChildren();
  String(text ?? '').split('`').forEach((part, i) => {
    if (i % 2) {
      const code = document.createElement('code');
      code.textContent = part;
      why.append(code);
    } else {
      why.append(part);
    }
  });
}

async function refresh(refused) {
  let status;
  try {
    status = await chrome.runtime.sendMessage({ type: 'status' });
  } catch {
    status = null;
  }
  $('pilot').checked = status?.pilot === true;
  if (refused) {
    say(refused);
  } else if (status && !status.pilot && status.terminalOnly) {
    say('A program can control this browser, so only `unmodal pilot on` in a terminal switches the pilot on.');
  } else {
    say('');
  }
  const host = $('host');
  const ok = status && status.host.connected;
  host.textContent = ok ? 'host connected' : 'host not connected';
  host.className = 'badge ' + (ok ? 'ok' : 'bad');
  $('hint').textContent = ok ? '' : 'Run `unmodal install`, then restart the browser. `unmodal doctor` explains more.';
  const list = $('recent');
  list.replaceChildren();
  for (const d of (status && status.recent) || []) {
    const li = document.createElement('li');
    const answer =
      d.by === 'pilot_off'
        ? 'native'
        : d.by === 'browser'
          ? 'not shown (the browser shows no dialog there)'
          : `${d.accepted ? 'accepted' : 'dismissed'} by ${d.by.replace('_', ' ')}`;
    li.textContent = `${d.kind}: “${d.message.slice(0, 80)}” — ${answer}`;
    list.append(li);
  }
  if (!list.children.length) list.innerHTML = '<li class="empty">None yet.</li>';
}

// Only a real click flips the switch: a scripted click() is refused before the box toggles
// (its change event would count as trusted, the click itself does not). The worker and the
// host still decide: a program driving the browser can make trusted clicks.
$('pilot').addEventListener('click', (event) => {
  if (!event.isTrusted) event.preventDefault();
});
$('pilot').addEventListener('change', async (event) => {
  let answer;
  try {
    answer = await chrome.runtime.sendMessage({ type: 'pilot_switch', on: event.target.checked });
  } catch {
    answer = { refused: 'Unmodal is not running; reload the extension.' };
  }
  refresh(answer?.refused);
});

refresh();
