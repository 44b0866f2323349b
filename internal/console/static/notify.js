// Browser notifications: while the page is hidden (another tab, a
// minimised window), a notification when a session's turn ends or its agent
// asks something, titled with the session's title; clicking it brings the
// page back on that session. Off until the person turns it on with the
// top bar's button, which asks the browser's permission
// (Notification.requestPermission); the choice is kept in localStorage.
//
// What happened is read off the root's session summaries
// (root/sessionSummaryChanged), so every session is watched, not only the
// open one: a status that leaves running means a turn ended, one that
// gains the input-needed bit means the agent asks.

const KEY = 'ahpd.notify';
const RUNNING = 8;
const NEEDS_INPUT = 16;

let deps = null;

function supported() {
  return typeof window.Notification === 'function';
}

// enabled: the browser allows it and the person turned it on.
export function notifyEnabled() {
  return supported() && Notification.permission === 'granted' && localStorage.getItem(KEY) === 'on';
}

function renderToggle() {
  const b = document.getElementById('notify-toggle');
  if (!b) return;
  if (!supported()) {
    b.hidden = true;
    return;
  }
  b.hidden = false;
  const denied = Notification.permission === 'denied';
  const on = notifyEnabled();
  b.disabled = denied;
  b.setAttribute('aria-pressed', String(on));
  b.textContent = denied ? 'Notifications blocked' : on ? 'Notifications on' : 'Notify me';
  b.title = denied ? 'The browser blocks notifications from this page; its site settings can allow them.' : on ? 'Turn notifications off' : 'Notify me when a turn ends or an agent asks, while this page is hidden';
}

async function toggle() {
  if (!supported()) return;
  if (notifyEnabled()) {
    localStorage.setItem(KEY, 'off');
  } else {
    let p = Notification.permission;
    if (p === 'default') {
      try {
        p = await Notification.requestPermission();
      } catch {
        p = Notification.permission;
      }
    }
    localStorage.setItem(KEY, p === 'granted' ? 'on' : 'off');
  }
  renderToggle();
}

// initNotify wires the toggle; d: {app, openSession}.
export function initNotify(d) {
  deps = d;
  const b = document.getElementById('notify-toggle');
  if (b) b.addEventListener('click', toggle);
  renderToggle();
}

// summaryChanged is told each session summary change with the status the
// summary had before it; it notifies what a hidden page's person would
// want to know.
export function summaryChanged(summary, before) {
  if (!deps || !notifyEnabled() || document.visibilityState !== 'hidden') return;
  const now = summary.status;
  if (now === undefined || before === undefined || now === before) return;
  let body = '';
  if (now & NEEDS_INPUT && !(before & NEEDS_INPUT)) body = 'The agent asks a question.';
  else if (before & RUNNING && !(now & RUNNING)) body = now & 2 ? 'The turn ended with an error.' : 'The turn ended.';
  if (!body) return;
  const uri = summary.resource;
  let n;
  try {
    n = new Notification(summary.title || 'ahpd session', { body, tag: uri });
  } catch {
    return; // a browser that takes notifications only from a service worker
  }
  n.onclick = () => {
    window.focus();
    if (deps.app.session !== uri) deps.openSession(uri);
    n.close();
  };
}
