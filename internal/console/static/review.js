// Changeset review: a changeset channel's files with their diffs, and the
// operations the host offers on it (state.operations: Keep and Undo of a
// turn's changes), for the whole changeset and per file, invoked with
// invokeChangesetOperation. An operation's progress (its status running,
// then idle or error) and the host's refusal (an undo of a file changed
// since, say) show in the panel; files come and go live as the channel's
// actions arrive.

import { hunks, lineDiff } from './diff.js';
import { confirmDialog } from './confirm.js';

// reduceChangeset applies one changeset channel action to s.
export function reduceChangeset(s, a) {
  switch (a.type) {
    case 'changeset/fileSet': {
      const i = s.files.findIndex((f) => f.id === a.file.id);
      if (i >= 0) s.files[i] = a.file;
      else s.files.push(a.file);
      return;
    }
    case 'changeset/fileRemoved':
      s.files = s.files.filter((f) => f.id !== a.fileId);
      return;
    case 'changeset/filesReviewChanged': {
      const ids = new Set(a.files || []);
      s.files = s.files.map((f) => (ids.has(f.id) ? { ...f, reviewed: !!a.reviewed } : f));
      return;
    }
    case 'changeset/contentChanged':
      s.files = a.files || [];
      if (a.operations !== undefined) s.operations = a.operations;
      s.error = a.error;
      return;
    case 'changeset/operationsChanged':
      s.operations = a.operations || [];
      return;
    case 'changeset/operationStatusChanged':
      s.operations = (s.operations || []).map((o) => (o.id === a.operationId ? { ...o, status: a.status, error: a.error } : o));
      return;
    case 'changeset/cleared':
      s.files = [];
      return;
    case 'changeset/statusChanged':
      s.status = a.status;
      s.error = a.error;
      return;
  }
}

function fileName(id) {
  try {
    return decodeURIComponent(String(id).replace(/^file:\/\//, ''));
  } catch {
    return String(id);
  }
}

// renderChangeset draws changeset cs ({uri, label, state, texts}) into
// panel. deps: {el, call(method, params), close, rerender}.
export function renderChangeset(panel, cs, deps) {
  const { el } = deps;
  cs.collapsed = cs.collapsed || new Set();
  cs.errors = cs.errors || new Map(); // target ('' or file id) -> message
  cs.busy = cs.busy || new Set(); // "op|target" invoked and not answered yet
  const st = cs.state;
  const ops = (st.operations || []).filter((o) => o && o.id);
  const opsFor = (scope) => ops.filter((o) => !o.scopes || o.scopes.includes(scope));
  const running = (o, target) => o.status === 'running' || cs.busy.has(o.id + '|' + target);

  const invoke = async (o, file) => {
    const target = file ? file.id : '';
    const what = file ? fileName(file.id) : 'every file of ' + cs.label;
    if (o.confirmation) {
      const text = typeof o.confirmation === 'string' ? o.confirmation : o.confirmation.markdown || JSON.stringify(o.confirmation);
      if (!(await confirmDialog(text + ' (' + what + ')', o.label))) return;
    }
    cs.errors.delete(target);
    cs.busy.add(o.id + '|' + target);
    deps.rerender();
    try {
      const r = await deps.call('invokeChangesetOperation', { channel: cs.uri, operationId: o.id, ...(file ? { target: { kind: 'resource', resource: file.id } } : {}) });
      cs.message = (r && r.message) || '';
    } catch (e) {
      cs.errors.set(target, o.label + ' failed: ' + (e.message || e));
      cs.message = '';
    } finally {
      cs.busy.delete(o.id + '|' + target);
      if (deps.current() === cs) deps.rerender();
    }
  };
  const opButtons = (scope, file) =>
    opsFor(scope).map((o) => {
      const target = file ? file.id : '';
      const busy = running(o, target);
      return el('button', {
        type: 'button',
        class: 'cs-op cs-op-' + o.id,
        dataset: { op: o.id, focusKey: 'cs-op:' + o.id + ':' + target },
        title: o.description || null,
        'aria-label': o.label + ' ' + (file ? fileName(file.id) : 'all files'),
        'aria-busy': busy ? 'true' : null,
        disabled: busy,
        onclick: () => invoke(o, file),
      }, busy ? o.label + '…' : file ? o.label : o.label + ' all');
    });

  const files = st.files || [];
  const body = el('div', { class: 'changes-files' });
  if (st.status === 'error' && st.error) body.append(el('p', { class: 'error', role: 'alert', text: st.error.message || 'This changeset is unavailable.' }));
  else if (!files.length) body.append(el('p', { class: 'hint', text: 'No changes.' }));
  for (const f of files) {
    const edit = typeof f.edit === 'string' ? safeJSON(f.edit) : f.edit || {};
    const name = fileName(f.id);
    const counts = edit.diff ? ` +${edit.diff.added || 0} −${edit.diff.removed || 0}` : '';
    const pre = el('pre', { class: 'diff', 'aria-label': 'Diff of ' + name, text: 'loading…' });
    const details = el('details', { class: 'file-diff', open: !cs.collapsed.has(f.id) }, el('summary', { text: 'Diff' }), pre);
    details.addEventListener('toggle', () => (details.open ? cs.collapsed.delete(f.id) : cs.collapsed.add(f.id)));
    const err = cs.errors.get(f.id);
    body.append(
      el('section', { class: 'file-edit', 'aria-label': name, dataset: { file: f.id, reviewed: String(!!f.reviewed) } },
        el('div', { class: 'file-head row' },
          el('span', { class: 'file-name', text: name + counts + (!edit.before ? ' (new)' : !edit.after ? ' (deleted)' : '') }),
          f.reviewed ? el('span', { class: 'badge reviewed', text: 'kept' }) : null,
          el('span', { class: 'spacer' }),
          ...opButtons('resource', f),
        ),
        err ? el('p', { class: 'error cs-error', role: 'alert', text: err }) : null,
        details,
      ),
    );
    const side = (x) => (x && x.content && x.content.uri ? deps.readText(x.content.uri) : Promise.resolve(''));
    Promise.all([side(edit.before), side(edit.after)]).then(([b, a]) => {
      const d = lineDiff(b, a);
      if (!d) {
        pre.textContent = 'too large to compare here';
        return;
      }
      pre.replaceChildren(...hunks(d).map((x) => el('span', { class: x.op === '+' ? 'add' : x.op === '-' ? 'del' : x.op === '@' ? 'hunk' : '', text: (x.op === '@' ? '' : x.op) + x.line + '\n' })));
    }, (e) => (pre.textContent = 'cannot read: ' + e.message));
  }
  const kept = files.filter((f) => f.reviewed).length;
  const whole = opButtons('changeset', null);
  const opErr = ops.find((o) => o.status === 'error' && o.error);
  const wholeErr = cs.errors.get('') || (!cs.errors.size && opErr ? opErr.label + ' failed: ' + opErr.error.message : '');
  const progress = ops.some((o) => running(o, '')) || cs.busy.size ? 'Working…' : files.length ? `${files.length} file(s), ${kept} kept` : '';
  const had = document.activeElement && panel.contains(document.activeElement) ? document.activeElement.dataset.focusKey : undefined;
  panel.replaceChildren(
    el('div', { class: 'row cs-head' },
      el('h2', { text: cs.label }),
      ...whole,
      el('button', { type: 'button', id: 'changes-close', onclick: deps.close, text: 'Close changes' }),
    ),
    el('p', { class: 'hint cs-progress', role: 'status', text: [progress, cs.message].filter(Boolean).join(' · ') }),
    ...(wholeErr ? [el('p', { class: 'error cs-error', role: 'alert', text: wholeErr })] : []),
    body,
  );
  if (had) panel.querySelector(`[data-focus-key="${CSS.escape(had)}"]`)?.focus();
}

function safeJSON(s) {
  try {
    return JSON.parse(s);
  } catch {
    return {};
  }
}
