'use strict';
const $ = (id) => document.getElementById(id);

async function refresh() {
  const { pilot } = await chrome.storage.local.get('pilot');
  $('pilot').checked = pilot === true;
  let status;
  try {
    status = await chrome.runtime.sendMessage({ type: 'status' });
  } catch {
    status = null;
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
    const answer = d.by === 'pilot_off' ? 'native' : `${d.accepted ? 'accepted' : 'dismissed'} by ${d.by.replace('_', ' ')}`;
    li.textContent = `${d.kind}: “${d.message.slice(0, 80)}” — ${answer}`;
    list.append(li);
  }
  if (!list.children.length) list.innerHTML = '<li class="empty">None yet.</li>';
}

// Only a real click flips the switch: a scripted click() is refused before the box toggles
// (its change event would count as trusted, the click itself does not).
$('pilot').addEventListener('click', (event) => {
  if (!event.isTrusted) event.preventDefault();
});
$('pilot').addEventListener('change', async (event) => {
  await chrome.storage.local.set({ pilot: event.target.checked });
  refresh();
});

refresh();
