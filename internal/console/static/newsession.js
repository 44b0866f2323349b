// The new session form: the agent (an unavailable one listed, disabled,
// with the reason the host gives), and under Options the folder the
// session works in and every property resolveSessionConfig answers for
// that agent and folder: its model, isolation (a worktree where the folder
// is a git repository), branch, sandbox and the backend's own settings.
//
// The form is drawn from the schema alone: an enum is a select (an
// unavailable value says so in its label), a boolean a checkbox, a string
// whose values are dynamic an input completed by sessionConfigCompletions,
// any other string a plain input. The folder is completed from the served
// paths with resourceList, one directory level at a time; the host
// refuses a folder outside them (resolveSessionConfig and createSession
// both check).

import { ROOT } from './proto.js';

const UNAVAILABLE = /\s*\(unavailable: (.*)\)\s*$/;

let app;
let el;
let $;

const form = {
  schema: null, // the last resolveSessionConfig schema
  values: {}, // what the person chose, by property key
  seq: 0, // the newest resolve asked; older answers are dropped
  listed: '', // the directory whose entries the folder list holds
};

// installNewSession wires the form; tools are app.js's helpers.
export function installNewSession(theApp, tools) {
  app = theApp;
  ({ el, $ } = tools);
  $('new-session-more').addEventListener('click', () => toggleOptions());
  $('provider').addEventListener('change', () => {
    renderProviderNote();
    form.values = {};
    if (!$('new-session-options').hidden) resolve();
  });
  let folderTimer = 0;
  $('ns-folder').addEventListener('input', () => {
    clearTimeout(folderTimer);
    folderTimer = setTimeout(() => {
      completeFolder();
      resolve();
    }, 200);
  });
}

// agentNote is why an agent cannot run here, or '' when it can.
function agentNote(a) {
  const m = UNAVAILABLE.exec((a && a.description) || '');
  return m ? m[1] : '';
}

// renderProviders lists the root state's agents, an unavailable one
// disabled with its reason; script is picked first when nothing was.
export function renderProviders() {
  const sel = $('provider');
  const agents = app.root.agents || [];
  const cur = sel.value;
  sel.replaceChildren(
    ...agents.map((a) => {
      const why = agentNote(a);
      const name = a.displayName || a.provider;
      return el('option', { value: a.provider, disabled: !!why, title: why || a.description || null, text: why ? `${name} (unavailable)` : name });
    }),
  );
  const usable = (p) => agents.some((a) => a.provider === p && !agentNote(a));
  if (usable(cur)) sel.value = cur;
  else if (usable('script')) sel.value = 'script';
  else {
    const first = agents.find((a) => !agentNote(a));
    if (first) sel.value = first.provider;
  }
  renderProviderNote();
}

// renderProviderNote says which agents cannot run here and why.
function renderProviderNote() {
  const notes = (app.root.agents || []).filter(agentNote).map((a) => `${a.displayName || a.provider}: ${agentNote(a)}`);
  $('provider-note').textContent = notes.length ? 'Unavailable here — ' + notes.join('; ') : '';
}

function toggleOptions(open) {
  const box = $('new-session-options');
  const show = open === undefined ? box.hidden : open;
  box.hidden = !show;
  $('new-session-more').setAttribute('aria-expanded', String(show));
  if (!show) return;
  if (!$('ns-folder').value) $('ns-folder').value = pathOf((app.conn.init || {}).defaultDirectory || '');
  completeFolder();
  resolve();
}

// pathOf turns a file: URI into the path a person reads and types.
function pathOf(uri) {
  if (!uri.startsWith('file://')) return uri;
  try {
    return decodeURIComponent(new URL(uri).pathname);
  } catch {
    return uri;
  }
}

// uriOf turns a typed absolute path into a file: URI ('' for none).
function uriOf(path) {
  path = path.trim();
  if (!path) return '';
  if (/^[a-z][a-z0-9+.-]*:/i.test(path)) return path;
  const u = new URL('file:///');
  u.pathname = path;
  return u.href;
}

// completeFolder lists the subfolders of the directory the typed path
// is in (or, when that one is not served, of the typed path itself: the
// served folder a person starts from), for the folder's datalist. What
// cannot be listed offers nothing; resolve says why a folder is refused.
async function completeFolder() {
  const typed = $('ns-folder').value;
  const cut = typed.lastIndexOf('/');
  if (cut < 0) return;
  const dir = typed.slice(0, cut + 1) || '/';
  if (typed === form.listed || dir === form.listed) return;
  const list = async (d) => {
    const r = await app.conn.call('resourceList', { channel: ROOT, uri: uriOf(d) });
    return (r.entries || []).filter((e) => e.type === 'directory').map((e) => d.replace(/\/?$/, '/') + e.name);
  };
  form.listed = dir;
  let dirs = [];
  try {
    dirs = await list(dir);
  } catch {
    if (typed !== dir) {
      form.listed = typed;
      dirs = await list(typed).catch(() => []);
    }
  }
  if (form.listed !== dir && form.listed !== typed) return;
  $('ns-folder-list').replaceChildren(...dirs.sort().slice(0, 200).map((d) => el('option', { value: d })));
}

// resolve asks the host what a session of the picked agent in the typed
// folder takes, and draws it.
async function resolve() {
  const seq = ++form.seq;
  const params = { channel: ROOT, provider: $('provider').value, config: chosen() };
  const folder = uriOf($('ns-folder').value);
  if (folder) params.workingDirectory = folder;
  try {
    const r = await app.conn.call('resolveSessionConfig', params);
    if (seq !== form.seq) return;
    form.schema = typeof r.schema === 'string' ? JSON.parse(r.schema) : r.schema;
    renderProperties(r.values || {});
    $('ns-error').textContent = '';
  } catch (e) {
    if (seq !== form.seq) return;
    form.schema = null;
    $('ns-properties').replaceChildren();
    $('ns-error').textContent = String(e.message || e);
  }
}

// chosen is what the person set, by key.
function chosen() {
  return { ...form.values };
}

const ORDER = ['model', 'isolation', 'branch', 'sandbox'];

function renderProperties(values) {
  const props = (form.schema && form.schema.properties) || {};
  const keys = Object.keys(props).sort((a, b) => {
    const ia = ORDER.indexOf(a), ib = ORDER.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
  });
  // A keyboard person's place survives the redraw a choice brings.
  const had = document.activeElement && $('ns-properties').contains(document.activeElement) ? document.activeElement.id : '';
  $('ns-properties').replaceChildren(...keys.map((k) => field(k, props[k], k in form.values ? form.values[k] : values[k])));
  if (had && $(had)) $(had).focus();
}

// field draws one property: enum → select, boolean → checkbox, dynamic
// string → input with completions, string → input.
function field(key, p, value) {
  const id = 'ns-prop-' + key;
  const label = p.title || key;
  const desc = p.description ? el('p', { class: 'hint', id: id + '-desc', text: p.description }) : null;
  const described = desc ? id + '-desc' : null;
  const set = (v) => {
    form.values[key] = v;
    // A choice can change the rest (a worktree offers its branch).
    resolve();
  };
  if (p.type === 'boolean') {
    const box = el('input', { type: 'checkbox', id, 'aria-describedby': described, dataset: { key }, onchange: (ev) => set(ev.target.checked) });
    box.checked = value === true || value === 'true';
    return el('div', { class: 'prop' }, el('label', { class: 'check', for: id }, box, label), desc);
  }
  if (Array.isArray(p.enum) && p.enum.length) {
    const sel = el('select', { id, 'aria-describedby': described, dataset: { key }, onchange: (ev) => set(ev.target.value) },
      ...p.enum.map((v, i) => el('option', { value: v, title: (p.enumDescriptions || [])[i] || null, text: (p.enumLabels || [])[i] || v })));
    sel.value = value !== undefined ? String(value) : p.default || p.enum[0];
    return el('div', { class: 'prop' }, el('label', { for: id, text: label }), sel, desc);
  }
  const listId = id + '-list';
  const input = el('input', { id, 'aria-describedby': described, autocomplete: 'off', spellcheck: 'false', list: p.enumDynamic ? listId : null, dataset: { key } });
  input.value = value !== undefined ? String(value) : p.default || '';
  input.addEventListener('change', () => set(input.value));
  const list = p.enumDynamic ? el('datalist', { id: listId }) : null;
  if (p.enumDynamic) {
    let timer = 0;
    const complete = () => {
      clearTimeout(timer);
      timer = setTimeout(() => completeProperty(key, input.value, list), 150);
    };
    input.addEventListener('input', complete);
    input.addEventListener('focus', complete);
  }
  return el('div', { class: 'prop' }, el('label', { for: id, text: label }), input, list, desc);
}

// completeProperty fills a dynamic property's datalist from
// sessionConfigCompletions.
async function completeProperty(key, query, list) {
  const params = { channel: ROOT, provider: $('provider').value, property: key, query, config: chosen() };
  const folder = uriOf($('ns-folder').value);
  if (folder) params.workingDirectory = folder;
  try {
    const r = await app.conn.call('sessionConfigCompletions', params);
    list.replaceChildren(...(r.items || []).map((it) => el('option', { value: it.value, text: it.label && it.label !== it.value ? it.label : null })));
  } catch {
    list.replaceChildren();
  }
}

// sessionParams are createSession's params besides the channel: the
// agent alone with the options closed (the host's defaults), else the
// folder and every property the form shows.
export function sessionParams() {
  const provider = $('provider').value;
  if ($('new-session-options').hidden) return { provider };
  const params = { provider };
  const folder = uriOf($('ns-folder').value);
  if (folder) params.workingDirectories = [folder];
  const config = {};
  for (const f of $('ns-properties').querySelectorAll('[data-key]')) {
    if (f.type === 'checkbox') config[f.dataset.key] = f.checked;
    else if (f.value !== '') config[f.dataset.key] = f.value;
  }
  if (Object.keys(config).length) params.config = config;
  return params;
}
