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

$('pilot').addEventListener('change', async (event) => {
  // Only a real user gesture flips the switch.
  if (!event.isTrusted) {
    event.target.checked = !event.target.checked;
    return;
  }
  await chrome.storage.local.set({ pilot: event.target.checked });
  refresh();
});

refresh();
