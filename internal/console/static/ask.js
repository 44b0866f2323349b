// Input requests: what an agent asks the person in a turn (an
// inputRequest part) as a form, one control per question, answered with
// chat/inputCompleted (accept, decline or cancel). What a person picks or
// types is synced as a draft (chat/inputAnswerChanged), so every page on
// the chat shows it; once answered, every page shows the answer.
//
// reduceInput is the pure part (reduce.js calls it); renderInputRequest
// draws a part. A live request's form is kept across redraws of its turn
// (the turn is drawn anew on each action), so what is typed and where the
// focus is survive them.

const KINDS = { text: 'text', number: 'number', integer: 'integer', boolean: 'boolean', single: 'single-select', multi: 'multi-select' };
const RESPONSE_TEXT = { accept: 'Answered', decline: 'Declined', cancel: 'Dismissed' };

// ---- the reducer (as internal/reduce does on the host) -----------------

function openRequest(s, id) {
  const t = s.activeTurn;
  if (!t) return -1;
  return t.responseParts.findIndex((p) => p.kind === 'inputRequest' && !p.response && p.request && p.request.id === id);
}

export function reduceInput(s, a) {
  const t = s.activeTurn;
  if (!t) return;
  switch (a.type) {
    case 'chat/inputRequested': {
      const req = structuredClone(a.request);
      const i = openRequest(s, req.id);
      if (i >= 0) {
        if (!req.answers) req.answers = t.responseParts[i].request.answers;
        t.responseParts[i] = { kind: 'inputRequest', request: req };
      } else t.responseParts.push({ kind: 'inputRequest', request: req });
      return;
    }
    case 'chat/inputAnswerChanged': {
      const i = openRequest(s, a.requestId);
      if (i < 0) return;
      const req = { ...t.responseParts[i].request, answers: { ...(t.responseParts[i].request.answers || {}) } };
      if (a.answer) req.answers[a.questionId] = a.answer;
      else delete req.answers[a.questionId];
      t.responseParts[i] = { kind: 'inputRequest', request: req };
      return;
    }
    case 'chat/inputCompleted': {
      const i = openRequest(s, a.requestId);
      if (i < 0) return;
      const req = { ...t.responseParts[i].request, answers: { ...(t.responseParts[i].request.answers || {}), ...(a.answers || {}) } };
      t.responseParts[i] = { kind: 'inputRequest', request: req, response: a.response };
    }
  }
}

// ---- drawing --------------------------------------------------------------

// forms keeps each live request's form by chat, turn and request, with the
// signature of what it was drawn from; forms of other chats or answered
// requests are dropped as they go.
const forms = new Map();

// answerText is what an answer says, for the answered view.
function answerText(q, ans) {
  if (!ans) return '(no answer)';
  if (ans.state === 'skipped') return '(skipped)';
  const v = ans.value || {};
  const label = (id) => ((q && q.options) || []).find((o) => o.id === id)?.label ?? id;
  const free = [...(v.freeformValues || []), ...(ans.freeformValues || [])];
  let s;
  switch (v.kind) {
    case 'selected':
      s = v.value ? label(v.value) : '';
      break;
    case 'selected-many':
      s = (v.value || []).map(label).join(', ');
      break;
    case 'boolean':
      s = v.value ? 'yes' : 'no';
      break;
    default:
      s = v.value === undefined ? '' : String(v.value);
  }
  return [s, ...free].filter((x) => x !== '').join(', ') || '(empty)';
}

// safeURL keeps only http(s) links: a request's URL is the agent's text.
function safeURL(u) {
  try {
    const url = new URL(u);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

// renderInputRequest draws part p of turn t. deps: {el, act, chat}.
export function renderInputRequest(p, t, live, deps) {
  const { el } = deps;
  const req = p.request || {};
  const questions = req.questions || [];
  const title = req.message || (questions.length === 1 ? questions[0].message : '') || 'The agent asks';
  const key = deps.chat + '|' + t.id + '|' + req.id;
  const head = () => {
    const nodes = [el('p', { class: 'ask-title', id: 'ask-' + cssId(key), text: title })];
    const href = req.url && safeURL(req.url);
    if (href) nodes.push(el('p', {}, el('a', { href, target: '_blank', rel: 'noopener noreferrer', class: 'ask-url', text: req.url })));
    return nodes;
  };
  if (p.response || !live) {
    forms.delete(key);
    const box = el('div', { class: 'input-request', role: 'group', 'aria-labelledby': 'ask-' + cssId(key), dataset: { requestId: req.id, response: p.response || 'none' } }, ...head());
    if (!p.response) box.append(el('p', { class: 'hint', text: 'Not answered.' }));
    else {
      box.append(el('p', { class: 'ask-response', text: RESPONSE_TEXT[p.response] || p.response }));
      if (p.response === 'accept' && questions.length) {
        box.append(el('ul', { class: 'ask-answers' }, ...questions.map((q) => el('li', { dataset: { question: q.id } }, el('span', { class: 'q', text: (q.title || q.message) + ': ' }), el('span', { class: 'a', text: answerText(q, (req.answers || {})[q.id]) })))));
      }
    }
    return box;
  }
  const sig = JSON.stringify({ id: req.id, message: req.message, url: req.url, questions });
  const kept = forms.get(key);
  if (kept && kept.sig === sig) {
    kept.sync(req.answers || {});
    kept.refocus();
    return kept.node;
  }
  const { form, sync } = buildForm(req, questions, key, head(), deps);
  forms.set(key, { sig, node: form, sync, refocus: refocuser(form) });
  for (const k of forms.keys()) if (!k.startsWith(deps.chat + '|')) forms.delete(k);
  return form;
}

function cssId(s) {
  return s.replace(/[^A-Za-z0-9_-]/g, '_');
}

// refocuser gives the focus back to the control that had it once the
// caller has moved the kept form into the new turn node.
function refocuser(form) {
  return () => {
    const had = document.activeElement;
    if (!had || !form.contains(had)) return;
    queueMicrotask(() => {
      if (had.isConnected && document.activeElement !== had) had.focus();
    });
  };
}

function buildForm(req, questions, key, head, deps) {
  const { el, act } = deps;
  const drafts = req.answers || {};
  // ctl.values reads each question's answer value (undefined: none);
  // ctl.shows puts a value another page drafted into its controls.
  const ctl = { values: new Map(), shows: new Map() };
  const values = ctl.values;
  const form = el('form', { class: 'input-request', 'aria-labelledby': 'ask-' + cssId(key), dataset: { requestId: req.id, response: 'none' } }, ...head);
  const err = el('p', { class: 'ask-error error', role: 'alert' });
  const complete = (response, answers) => {
    err.textContent = '';
    const action = { type: 'chat/inputCompleted', requestId: req.id, response };
    if (answers && Object.keys(answers).length) action.answers = answers;
    if (act(action)) form.querySelectorAll('button, input, select, textarea').forEach((n) => (n.disabled = true));
  };
  const draft = (qid, answer) => act({ type: 'chat/inputAnswerChanged', requestId: req.id, questionId: qid, ...(answer ? { answer } : {}) });
  const collect = () => {
    const out = {};
    for (const q of questions) {
      const v = values.get(q.id)();
      if (v === undefined) {
        if (q.required) throw new Error('Answer: ' + (q.title || q.message));
        continue;
      }
      out[q.id] = { state: 'submitted', value: v };
    }
    return out;
  };
  const submit = () => {
    try {
      complete('accept', collect());
    } catch (e) {
      err.textContent = e.message;
    }
  };
  // One question whose answer is one press (a single select, a yes or
  // no): its buttons answer at once.
  const direct = questions.length === 1 && (questions[0].kind === KINDS.single || questions[0].kind === KINDS.boolean);
  questions.forEach((q, qi) => form.append(renderQuestion(q, qi, key, req.message, drafts[q.id], ctl, direct ? (v) => complete('accept', { [q.id]: { state: 'submitted', value: v } }) : null, draft, deps)));
  const buttons = el('div', { class: 'ask-buttons row' });
  if (!direct) buttons.append(el('button', { type: 'submit', class: 'ask-submit', dataset: { focusKey: 'ask-submit:' + key }, text: questions.length ? 'Submit' : req.url && safeURL(req.url) ? 'Done' : 'Accept' }));
  buttons.append(
    el('button', { type: 'button', class: 'ask-decline', dataset: { focusKey: 'ask-decline:' + key }, onclick: () => complete('decline'), text: 'Decline' }),
    el('button', { type: 'button', class: 'ask-cancel', dataset: { focusKey: 'ask-cancel:' + key }, onclick: () => complete('cancel'), text: 'Dismiss' }),
  );
  form.append(buttons, err);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    submit();
  });
  // sync shows the drafts of the request as the host holds them now: a
  // question whose draft changed (another page's, or this one's echo) is
  // shown anew, unless the person is in its controls.
  const seen = new Map(questions.map((q) => [q.id, JSON.stringify(drafts[q.id] || null)]));
  const sync = (answers) => {
    for (const q of questions) {
      const now = JSON.stringify(answers[q.id] || null);
      if (seen.get(q.id) === now) continue;
      seen.set(q.id, now);
      const box = form.querySelector(`fieldset[data-question="${CSS.escape(q.id)}"]`);
      if (box && box.contains(document.activeElement)) continue;
      const show = ctl.shows.get(q.id);
      const a = answers[q.id];
      if (show) show(a && a.state !== 'skipped' ? a.value : undefined);
    }
  };
  return { form, sync };
}

// renderQuestion draws one question as a fieldset; values gets the function
// that reads its answer value (undefined: none given). answerNow, when
// set, is called with the value of a pressed option.
function renderQuestion(q, qi, key, asked, saved, ctl, answerNow, draft, deps) {
  const values = ctl.values;
  const shows = ctl.shows;
  const { el } = deps;
  const id = 'ask-' + cssId(key) + '-q' + qi;
  const legend = el('legend', { text: q.title && q.title !== q.message ? q.title : q.message || q.id });
  const box = el('fieldset', { class: 'ask-question', dataset: { question: q.id, kind: q.kind } }, legend);
  if (q.title && q.message && q.title !== q.message && q.message !== asked) box.append(el('p', { class: 'hint', text: q.message }));
  const sv = saved && saved.value;
  const free = q.allowFreeformInput ? el('input', { type: 'text', id: id + '-free', class: 'ask-free', 'aria-label': 'Or type an answer', placeholder: 'Or type an answer', value: ((sv && sv.freeformValues) || [])[0] || '' }) : null;
  const freeValues = () => (free && free.value.trim() ? [free.value.trim()] : []);
  const showFree = (v) => {
    if (free) free.value = ((v && v.freeformValues) || [])[0] || '';
  };
  const sendDraft = (v) => draft(q.id, v === undefined ? undefined : { state: 'draft', value: v });
  switch (q.kind) {
    case KINDS.single: {
      let chosen = sv && sv.kind === 'selected' ? sv.value : (q.options || []).find((o) => o.recommended)?.id;
      const group = el('div', { class: 'ask-options', role: answerNow ? 'group' : 'radiogroup', 'aria-label': legend.textContent });
      const buttons = (q.options || []).map((o) =>
        el('button', {
          type: 'button',
          class: 'ask-option',
          dataset: { option: o.id, focusKey: 'ask-opt:' + key + ':' + q.id + ':' + o.id },
          role: answerNow ? null : 'radio',
          'aria-checked': answerNow ? null : String(o.id === chosen),
          title: o.description || null,
          onclick: () => {
            if (answerNow) return answerNow({ kind: 'selected', value: o.id, ...(freeValues().length ? { freeformValues: freeValues() } : {}) });
            chosen = o.id;
            buttons.forEach((b) => b.setAttribute('aria-checked', String(b.dataset.option === chosen)));
            sendDraft({ kind: 'selected', value: chosen });
          },
        }, o.label + (o.recommended ? ' (recommended)' : '')),
      );
      group.append(...buttons);
      box.append(group);
      if (free) {
        box.append(free);
        if (answerNow) {
          box.append(el('button', { type: 'button', class: 'ask-free-send', onclick: () => freeValues().length && answerNow({ kind: 'selected', value: '', freeformValues: freeValues() }), text: 'Send typed answer' }));
        }
      }
      values.set(q.id, () => (chosen || freeValues().length ? { kind: 'selected', value: chosen || '', ...(freeValues().length ? { freeformValues: freeValues() } : {}) } : undefined));
      shows.set(q.id, (v) => {
        chosen = v && v.kind === 'selected' ? v.value : undefined;
        if (!answerNow) buttons.forEach((b) => b.setAttribute('aria-checked', String(b.dataset.option === chosen)));
        showFree(v);
      });
      break;
    }
    case KINDS.multi: {
      const had = new Set(sv && sv.kind === 'selected-many' ? sv.value || [] : (q.options || []).filter((o) => o.recommended).map((o) => o.id));
      const checks = (q.options || []).map((o, i) => {
        const cb = el('input', { type: 'checkbox', id: id + '-o' + i, value: o.id, checked: had.has(o.id) });
        cb.addEventListener('change', () => sendDraft(read()));
        return el('label', { class: 'ask-check', for: id + '-o' + i, title: o.description || null }, cb, ' ' + o.label);
      });
      const read = () => {
        const sel = checks.map((l) => l.querySelector('input')).filter((c) => c.checked).map((c) => c.value);
        if (!sel.length && !freeValues().length) return undefined;
        return { kind: 'selected-many', value: sel, ...(freeValues().length ? { freeformValues: freeValues() } : {}) };
      };
      box.append(el('div', { class: 'ask-options' }, ...checks));
      if (free) box.append(free);
      shows.set(q.id, (v) => {
        const on = new Set(v && v.kind === 'selected-many' ? v.value || [] : []);
        checks.forEach((l) => (l.querySelector('input').checked = on.has(l.querySelector('input').value)));
        showFree(v);
      });
      values.set(q.id, () => {
        const v = read();
        const n = v ? v.value.length : 0;
        if (v && q.min !== undefined && n < q.min) throw new Error(`Pick at least ${q.min}: ${legend.textContent}`);
        if (v && q.max !== undefined && n > q.max) throw new Error(`Pick at most ${q.max}: ${legend.textContent}`);
        return v;
      });
      break;
    }
    case KINDS.boolean: {
      let chosen = sv && sv.kind === 'boolean' ? sv.value : undefined;
      const buttons = [true, false].map((b) =>
        el('button', {
          type: 'button',
          class: 'ask-option ask-' + (b ? 'yes' : 'no'),
          dataset: { option: String(b), focusKey: 'ask-opt:' + key + ':' + q.id + ':' + b },
          role: answerNow ? null : 'radio',
          'aria-checked': answerNow ? null : String(chosen === b),
          onclick: () => {
            if (answerNow) return answerNow({ kind: 'boolean', value: b });
            chosen = b;
            buttons.forEach((x) => x.setAttribute('aria-checked', String(x.dataset.option === String(b))));
            sendDraft({ kind: 'boolean', value: b });
          },
        }, b ? 'Yes' : 'No'),
      );
      box.append(el('div', { class: 'ask-options', role: answerNow ? 'group' : 'radiogroup', 'aria-label': legend.textContent }, ...buttons));
      values.set(q.id, () => (chosen === undefined ? undefined : { kind: 'boolean', value: chosen }));
      shows.set(q.id, (v) => {
        chosen = v && v.kind === 'boolean' ? v.value : undefined;
        if (!answerNow) buttons.forEach((x) => x.setAttribute('aria-checked', String(x.dataset.option === String(chosen))));
      });
      break;
    }
    case KINDS.number:
    case KINDS.integer: {
      const input = el('input', { type: 'number', id, step: q.kind === KINDS.integer ? '1' : 'any', min: q.min, max: q.max, required: !!q.required, value: sv && sv.kind === 'number' ? String(sv.value) : q.defaultValue !== undefined ? String(q.defaultValue) : '' });
      input.addEventListener('change', () => sendDraft(read()));
      const read = () => (input.value === '' || isNaN(input.valueAsNumber) ? undefined : { kind: 'number', value: input.valueAsNumber });
      shows.set(q.id, (v) => (input.value = v && v.kind === 'number' ? String(v.value) : ''));
      box.append(el('label', { for: id, class: 'sr-only', text: legend.textContent }), input);
      values.set(q.id, () => {
        const v = read();
        if (v && q.kind === KINDS.integer && !Number.isInteger(v.value)) throw new Error('A whole number: ' + legend.textContent);
        if (v && ((q.min !== undefined && v.value < q.min) || (q.max !== undefined && v.value > q.max))) throw new Error(`Between ${q.min ?? '…'} and ${q.max ?? '…'}: ${legend.textContent}`);
        return v;
      });
      break;
    }
    default: {
      // text, and any kind this page does not know: a text box.
      const type = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' }[q.format] || 'text';
      const long = type === 'text' && (q.max === undefined || q.max > 200);
      const input = el(long ? 'textarea' : 'input', { id, type: long ? null : type, rows: long ? '2' : null, minlength: q.min, maxlength: q.max, required: !!q.required, class: 'ask-text' });
      input.value = sv && sv.kind === 'text' ? sv.value : typeof q.defaultValue === 'string' ? q.defaultValue : '';
      input.addEventListener('change', () => sendDraft(read()));
      const read = () => (input.value === '' ? undefined : { kind: 'text', value: input.value });
      shows.set(q.id, (v) => (input.value = v && v.kind === 'text' ? v.value : ''));
      box.append(el('label', { for: id, class: 'sr-only', text: legend.textContent }), input);
      values.set(q.id, read);
    }
  }
  return box;
}
