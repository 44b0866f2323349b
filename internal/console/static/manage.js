// Session management: rename (session/titleChanged on the session's
// channel), archive and unarchive (session/isArchivedChanged), delete
// (disposeSession, after a confirmation), from a session's row in the list
// and from the open session's header; and the list's filter for archived
// sessions, which are hidden unless asked for.

import { confirmDialog } from './confirm.js';

const ARCHIVED = 64; // SessionStatus.IsArchived

export function isArchived(s) {
  return !!(s && s.status & ARCHIVED);
}

// sessionShown: the list shows archived sessions only when asked to.
export function sessionShown(s) {
  const box = document.getElementById('show-archived');
  return !isArchived(s) || (box && box.checked);
}

// openRow is the session whose row shows its tools, kept across the
// list's redraws.
let openRow = null;

function titleOf(s, deps) {
  const st = deps.app.session === s.resource ? deps.app.sessionState : null;
  return (st && st.title) || s.title || '(untitled)';
}

function report(deps, e) {
  const n = document.getElementById('sessions-error');
  if (n) n.textContent = e ? String(e.message || e) : '';
  if (e) deps.alertError(e);
}

function dispatch(deps, uri, action) {
  report(deps, null);
  try {
    deps.app.conn.dispatch(uri, action);
  } catch (e) {
    report(deps, e);
  }
}

// rename asks for the new title in a dialog and says it on the session.
async function rename(s, deps) {
  const title = await promptDialog('Rename the session', titleOf(s, deps), deps);
  if (title && title !== titleOf(s, deps)) dispatch(deps, s.resource, { type: 'session/titleChanged', title });
}

function archive(s, archived, deps) {
  dispatch(deps, s.resource, { type: 'session/isArchivedChanged', isArchived: archived });
}

async function remove(s, deps) {
  const ok = await confirmDialog(`Delete "${titleOf(s, deps)}"? Its chats and their history go with it; this cannot be undone.`, 'Delete session');
  if (!ok) return;
  report(deps, null);
  try {
    await deps.app.conn.call('disposeSession', { channel: s.resource });
  } catch (e) {
    report(deps, e);
  }
}

// tools are the buttons acting on session s; where names them for their
// focus keys ('row' or 'head').
function tools(s, where, deps) {
  const { el } = deps;
  const title = titleOf(s, deps);
  const archived = isArchived(s);
  const key = (what) => `${where}-${what}:${s.resource}`;
  // In the header they sit above the chat's own Rename: their text says
  // they act on the session.
  const noun = where === 'head' ? ' session' : '';
  return [
    el('button', { type: 'button', class: 'session-rename', dataset: { focusKey: key('rename') }, 'aria-label': 'Rename session ' + title, onclick: () => rename(s, deps), text: 'Rename' + noun }),
    el('button', { type: 'button', class: 'session-archive', dataset: { focusKey: key('archive') }, 'aria-label': (archived ? 'Unarchive session ' : 'Archive session ') + title, onclick: () => archive(s, !archived, deps), text: archived ? 'Unarchive' : 'Archive' }),
    el('button', { type: 'button', class: 'session-delete deny', dataset: { focusKey: key('delete') }, 'aria-label': 'Delete session ' + title, onclick: () => remove(s, deps), text: 'Delete' + noun }),
  ];
}

// sessionRowTools are the nodes a row of the list holds after its
// session's button: a toggle (with an archived badge) and, toggled open,
// the session's tools.
export function sessionRowTools(s, deps) {
  const { el } = deps;
  const open = openRow === s.resource;
  const id = 'row-tools-' + s.resource.replace(/[^A-Za-z0-9_-]/g, '_');
  const out = el('div', { class: 'row-tools' });
  if (isArchived(s)) out.append(el('span', { class: 'badge archived', text: 'archived' }));
  out.append(
    el('button', {
      type: 'button',
      class: 'row-tools-toggle',
      'aria-expanded': open ? 'true' : 'false',
      'aria-controls': id,
      'aria-label': 'Actions for ' + titleOf(s, deps),
      dataset: { focusKey: 'row-toggle:' + s.resource },
      onclick: () => {
        openRow = open ? null : s.resource;
        deps.rerender();
      },
      text: '⋯',
    }),
  );
  if (!open) return [out];
  return [out, el('div', { class: 'row-tools-menu row', id, role: 'group', 'aria-label': 'Actions for ' + titleOf(s, deps) }, ...tools(s, 'row', deps))];
}

// renderSessionTools draws the open session's tools into its header.
export function renderSessionTools(deps) {
  const box = document.getElementById('session-tools');
  if (!box) return;
  const uri = deps.app.session;
  const s = uri && (deps.app.sessions.get(uri) || (deps.app.sessionState ? { resource: uri, title: deps.app.sessionState.title, status: deps.app.sessionState.status } : null));
  const had = document.activeElement && box.contains(document.activeElement) ? document.activeElement.dataset.focusKey : undefined;
  box.replaceChildren(...(s ? [...(isArchived(s) ? [deps.el('span', { class: 'badge archived', text: 'archived' })] : []), ...tools(s, 'head', deps)] : []));
  if (had) box.querySelector(`[data-focus-key="${CSS.escape(had)}"]`)?.focus();
}

// promptDialog asks for one line of text in a modal dialog; it resolves
// the trimmed text, or null when cancelled.
function promptDialog(label, value, deps) {
  const { el } = deps;
  return new Promise((resolve) => {
    const input = el('input', { id: 'prompt-input', type: 'text', autocomplete: 'off' });
    input.value = value || '';
    let result = null;
    const dlg = el('dialog', { class: 'confirm-dialog prompt-dialog', 'aria-label': label });
    const form = el('form', { method: 'dialog' },
      el('label', { for: 'prompt-input', text: label }),
      input,
      el('div', { class: 'row' },
        el('button', { type: 'button', class: 'confirm-no', onclick: () => dlg.close(), text: 'Cancel' }),
        el('button', { type: 'submit', class: 'confirm-yes', text: 'Save' }),
      ),
    );
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      result = input.value.trim() || null;
      dlg.close();
    });
    dlg.append(form);
    const back = document.activeElement;
    dlg.addEventListener('close', () => {
      dlg.remove();
      if (back && back.isConnected) back.focus();
      resolve(result);
    });
    document.body.append(dlg);
    dlg.showModal();
    input.focus();
    input.select();
  });
}
