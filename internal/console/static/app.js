// The console's page: sessions, chats as tabs, a chat's turns, and the
// composer. State comes from snapshots and echoed envelopes only
// (reduce.js); the DOM is rebuilt from it, never from HTML strings.

import { Connection, ROOT, uuid } from './proto.js';
import { reduceChat, reduceSession, statusText } from './reduce.js';
import { renderMarkdown } from './markdown.js';
import { reduceChangeset, renderChangeset as renderChangesetPanel } from './review.js';
import { renderInputRequest } from './ask.js';
import { renderSessionTools, sessionRowTools, sessionShown } from './manage.js';
import { initNotify, summaryChanged } from './notify.js';
import { installNewSession, renderProviders as drawProviders, sessionParams } from './newsession.js';
import { noteChat, sessionUsage, turnUsage } from './usage.js';
import { installTerminals, terminalOfCall, terminalView } from './terminal.js';
import { installLogs } from './logs.js';
import { installPanels } from './panels.js';
import { wireSearch, tapAction } from './search.js';

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = 'ahpd.token';
const PAGE_TURNS = 30;
const MAX_ATTACH_BYTES = 8 << 20;

const app = {
  conn: null,
  root: { agents: [] },
  sessions: new Map(), // uri -> SessionSummary
  session: null, // uri
  sessionState: null,
  chat: null, // uri
  chatState: null,
  attachments: [],
  lastLocalDraft: 0,
  loadingOlder: false,
  completion: { items: [], index: 0, seq: 0 },
  rendered: new Map(), // turn id -> {node, key}
};
window.ahpdConsole = app; // for a person's devtools and the browser tests' reads

// Modules (terminal.js, logs.js, panels.js) hear what arrives through
// hooks: 'action' (env), 'snapshot' (resource, state), 'notification'
// (method, params), 'ready' (first), 'panel' (name).
const hooks = new Map();
app.hook = (kind, f) => hooks.set(kind, [...(hooks.get(kind) || []), f]);
app.fire = (kind, ...args) => {
  for (const f of hooks.get(kind) || []) f(...args);
};

function el(tag, attrs = {}, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') n.className = v;
    else if (k === 'text') n.textContent = v;
    else if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(n.dataset, v);
    else n.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined) n.append(c);
  return n;
}

// manage is what the session tools (manage.js) use of the page.
const manage = { el, app, alertError, rerender: renderSessions };

// keepFocus runs render, then gives the focus back to the element that had
// it when render replaced that element with a new one of the same focus
// key: a person tabbing through the list or a turn does not lose their
// place when an envelope arrives.
function keepFocus(container, render) {
  const had = document.activeElement;
  const key = had && container.contains(had) ? had.dataset.focusKey : undefined;
  render();
  if (key && !had.isConnected) {
    const again = container.querySelector(`[data-focus-key="${CSS.escape(key)}"]`);
    if (again) again.focus();
  }
}

// place makes container's children be nodes, in order, moving only what
// is out of place, so a node kept from the last render is never detached
// (it keeps its focus, its open details and its scroll).
function place(container, nodes) {
  nodes.forEach((n, i) => {
    if (container.children[i] !== n) container.insertBefore(n, container.children[i] || null);
  });
  while (container.children.length > nodes.length) container.lastElementChild.remove();
}

function showError(where, e) {
  const n = $(where);
  n.textContent = e ? String(e.message || e) : '';
}

function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return isNaN(d) ? '' : d.toLocaleString();
}

function text(v) {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v.markdown === 'string') return v.markdown;
  return JSON.stringify(v, null, 2);
}

// ---- start-up and the token page ----------------------------------------

async function probe(token) {
  const headers = token ? { Authorization: 'Bearer ' + token } : {};
  const r = await fetch('/status', { headers, cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer' });
  return r.status !== 401;
}

async function boot() {
  wire();
  const tools = { el, $ };
  installNewSession(app, tools);
  installTerminals(app, tools);
  installLogs(app, tools);
  installPanels(app, tools);
  const token = sessionStorage.getItem(TOKEN_KEY) || '';
  let ok;
  try {
    ok = await probe(token);
  } catch (e) {
    ok = true; // no /status answer: let the websocket say
  }
  if (!ok) {
    tokenPage(token ? 'That token was not accepted.' : '');
    return;
  }
  connect(token);
}

function tokenPage(err) {
  $('app').hidden = true;
  $('token-page').hidden = false;
  $('token-error').textContent = err || '';
  $('conn').textContent = 'token needed';
  $('conn').dataset.status = 'token';
  $('token-input').focus();
}

function connect(token) {
  $('token-page').hidden = true;
  $('app').hidden = false;
  $('forget').hidden = !token;
  const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/';
  app.conn = new Connection(url, token, {
    onAction,
    onNotification,
    onSnapshot,
    onStatus(status, detail) {
      $('conn').dataset.status = status;
      $('conn').textContent = status + (detail ? ': ' + detail : '');
      document.body.dataset.conn = status;
      renderComposer();
    },
    onReady,
  });
  app.conn.start();
}

async function onReady(first, missing) {
  $('conn').dataset.reconnects = String(app.conn.reconnects);
  $('conn').dataset.handshakes = String(app.conn.handshakes);
  const init = app.conn.init || {};
  app.triggers = init.completionTriggerCharacters || ['/', '@', '#'];
  app.bang = init.terminalCommandPrefix || '!';
  await loadSessions();
  app.fire('ready', first);
  if (first) {
    const h = new URLSearchParams(location.hash.slice(1));
    const s = app.session || h.get('s');
    const c = app.chat || h.get('c');
    app.session = null;
    app.chat = null;
    if (s) openSession(s, c);
  } else {
    // A channel the host could not replay is subscribed to again.
    for (const ch of missing || []) {
      if (ch === app.session) openSession(app.session, app.chat);
      else if (ch === app.chat) openChat(app.chat);
    }
  }
}

// ---- incoming -----------------------------------------------------------

function onSnapshot(resource, state) {
  app.fire('snapshot', resource, state);
  if (resource === ROOT) {
    app.root = state || { agents: [] };
    renderProviders();
  } else if (resource === app.session) {
    app.sessionState = state;
    renderSession();
  } else if (resource === app.chat) {
    setChatState(state);
  }
}

function onAction(env) {
  tapAction(env); // search.js: an export's fetchTurns pages
  const a = env.action || {};
  app.fire('action', env);
  if (env.rejectionReason) {
    if (env.origin && env.origin.clientId === app.conn.clientId) showError('compose-error', 'refused: ' + env.rejectionReason);
    return;
  }
  if (env.channel === ROOT) {
    if (a.type === 'root/agentsChanged') {
      app.root.agents = a.agents;
      renderProviders();
    }
    return;
  }
  if (env.channel === app.session && app.sessionState) {
    reduceSession(app.sessionState, a);
    renderSession();
    if (a.type === 'session/chatRemoved' && a.chat === app.chat) {
      openChat(app.sessionState.defaultChat || (app.sessionState.chats[0] || {}).resource);
    }
  }
  if (app.changeset && env.channel === app.changeset.uri) {
    reduceChangeset(app.changeset.state, a);
    renderChangeset();
  }
  if (env.channel === app.chat && app.chatState) {
    const mine = env.origin && env.origin.clientId === app.conn.clientId;
    reduceChat(app.chatState, a);
    if (a.type === 'chat/draftChanged' && !mine) applyRemoteDraft();
    scheduleRender();
  }
}

function onNotification(method, p) {
  app.fire('notification', method, p);
  switch (method) {
    case 'root/sessionAdded':
      app.sessions.set(p.summary.resource, p.summary);
      break;
    case 'root/sessionRemoved':
      app.sessions.delete(p.session);
      if (p.session === app.session) closeSession();
      break;
    case 'root/sessionSummaryChanged': {
      const s = app.sessions.get(p.session);
      const before = s && s.status;
      if (s) Object.assign(s, p.changes);
      if (s) summaryChanged(s, before);
      break;
    }
    default:
      return;
  }
  renderSessions();
}

// ---- sessions -----------------------------------------------------------

async function loadSessions() {
  const all = new Map();
  let cursor;
  for (let page = 0; page < 10; page++) {
    const r = await app.conn.call('listSessions', { channel: ROOT, ...(cursor ? { cursor } : {}) });
    for (const s of r.items || []) all.set(s.resource, s);
    cursor = r.nextCursor;
    if (!cursor || !(r.items || []).length) break;
  }
  app.sessions = all;
  renderSessions();
}

function renderProviders() {
  drawProviders(); // newsession.js
}

function renderSessions() {
  const q = $('filter').value.trim().toLowerCase();
  const rows = [...app.sessions.values()]
    .filter((s) => sessionShown(s) && (!q || [s.title, s.provider, s.activity].some((v) => (v || '').toLowerCase().includes(q))))
    .sort((a, b) => String(b.modifiedAt).localeCompare(String(a.modifiedAt)));
  keepFocus($('sessions-list'), () => $('sessions-list').replaceChildren(
    ...rows.map((s) =>
      el(
        'li',
        { dataset: { session: s.resource } },
        el(
          'button',
          { type: 'button', class: 'session-item', 'aria-current': s.resource === app.session ? 'true' : null, dataset: { focusKey: 'session:' + s.resource }, onclick: () => openSession(s.resource) },
          el('span', { class: 'title', text: s.title || '(untitled)' }),
          el('span', { class: 'meta' }, el('span', { class: 'status', dataset: { status: statusText(s.status) }, text: statusText(s.status) }), ' · ', el('span', { class: 'provider', text: s.provider }), s.activity ? el('span', { class: 'activity', text: ' · ' + s.activity }) : null),
          el('time', { class: 'modified', datetime: s.modifiedAt, text: when(s.modifiedAt) }),
        ),
        ...sessionRowTools(s, manage),
      ),
    ),
  ));
  renderSessionTools(manage);
}

async function createSession(ev) {
  ev.preventDefault();
  const uri = 'ahp-session:/' + uuid();
  try {
    await app.conn.call('createSession', { channel: uri, ...sessionParams(), progressToken: 'console-' + uuid() });
    await openSession(uri);
  } catch (e) {
    alertError(e);
  }
}

function alertError(e) {
  showError('compose-error', e);
  $('conn').title = String(e.message || e);
}

async function openSession(uri, chat) {
  if (app.session && app.session !== uri) app.conn.unsubscribe(app.session);
  if (app.chat) {
    app.conn.unsubscribe(app.chat);
    app.chat = null;
    app.chatState = null;
  }
  app.session = uri;
  app.sessionState = null;
  document.body.dataset.view = 'chat';
  try {
    app.sessionState = await app.conn.subscribe(uri);
  } catch (e) {
    alertError(e);
    return;
  }
  renderSessions();
  renderSession();
  const st = app.sessionState;
  const want = chat && st.chats.some((c) => c.resource === chat) ? chat : st.defaultChat || (st.chats[0] || {}).resource;
  if (want) await openChat(want);
}

function closeSession() {
  app.session = null;
  app.sessionState = null;
  app.chat = null;
  app.chatState = null;
  document.body.dataset.view = 'sessions';
  renderSession();
}

function visibleChats() {
  return (app.sessionState ? app.sessionState.chats : []).filter((c) => c.interactivity !== 'hidden');
}

function renderSession() {
  const st = app.sessionState;
  $('no-session').hidden = !!st;
  $('session-view').hidden = !st;
  if (!st) return;
  const summary = app.sessions.get(app.session);
  $('session-title').textContent = st.title || (summary && summary.title) || '(untitled session)';
  renderSessionTools(manage);
  renderSessionUsage();
  const tabs = visibleChats().map((c) => {
    const selected = c.resource === app.chat;
    return el('button', {
      type: 'button',
      role: 'tab',
      id: 'tab-' + c.resource,
      class: 'tab',
      'aria-selected': selected ? 'true' : 'false',
      tabindex: selected ? '0' : '-1',
      'aria-controls': 'chat-panel',
      dataset: { chat: c.resource, status: statusText(c.status), origin: c.origin ? c.origin.kind : 'user', focusKey: 'tab:' + c.resource },
      onclick: () => openChat(c.resource),
      onkeydown: tabKeys,
      text: (c.title || 'Chat') + (c.resource === st.defaultChat ? '' : ''),
    });
  });
  keepFocus($('tabs'), () => $('tabs').replaceChildren(...tabs));
  $('chat-panel').setAttribute('aria-labelledby', 'tab-' + app.chat);
}

// renderSessionUsage shows the session's token and cost totals (usage.js).
function renderSessionUsage() {
  const st = app.sessionState;
  if (!st) return;
  const u = sessionUsage(app.session, visibleChats());
  $('session-usage').hidden = !u.text;
  $('session-usage').textContent = u.text + (u.note ? ' — ' + u.note : '');
}

function tabKeys(ev) {
  const tabs = [...$('tabs').querySelectorAll('[role=tab]')];
  const i = tabs.indexOf(ev.currentTarget);
  let j = -1;
  if (ev.key === 'ArrowRight') j = (i + 1) % tabs.length;
  else if (ev.key === 'ArrowLeft') j = (i - 1 + tabs.length) % tabs.length;
  else if (ev.key === 'Home') j = 0;
  else if (ev.key === 'End') j = tabs.length - 1;
  if (j < 0) return;
  ev.preventDefault();
  tabs[j].focus();
  tabs[j].click();
}

// ---- a chat --------------------------------------------------------------

async function openChat(uri) {
  if (!uri) return;
  if (app.chat && app.chat !== uri) app.conn.unsubscribe(app.chat);
  app.chat = uri;
  app.chatState = null;
  app.rendered.clear();
  $('turns').replaceChildren();
  app.attachments = [];
  renderAttachments();
  // The box shows the open chat's shared draft, never another chat's.
  $('message').value = '';
  closeChangeset();
  history.replaceState(null, '', '#' + new URLSearchParams({ s: app.session, c: uri }).toString());
  renderSession();
  try {
    const st = await app.conn.subscribe(uri, { view: { turns: PAGE_TURNS } });
    if (app.chat !== uri) return;
    setChatState(st);
  } catch (e) {
    alertError(e);
  }
}

function setChatState(st) {
  st.turns = st.turns || [];
  app.chatState = st;
  app.rendered.clear();
  $('turns').replaceChildren();
  const box = $('message');
  if (!box.value && st.draft) box.value = st.draft.text || '';
  renderChat(true);
}

let rafPending = false;
app.redraw = () => scheduleRender(); // for terminal.js: a call's terminal opened
function scheduleRender() {
  if (rafPending) return;
  rafPending = true;
  // A hidden tab gets no animation frames; it still keeps its DOM current
  // (screen readers, a second window on the same chat).
  const later = document.hidden ? (f) => setTimeout(f, 50) : requestAnimationFrame;
  later(() => {
    rafPending = false;
    renderChat(false);
  });
}

function renderChat(scrollToEnd) {
  const st = app.chatState;
  if (!st) return;
  const log = $('turns');
  const nearEnd = scrollToEnd || log.scrollHeight - log.scrollTop - log.clientHeight < 80;
  const firstBefore = log.firstElementChild;
  const topBefore = firstBefore ? firstBefore.getBoundingClientRect().top : 0;
  const want = [...st.turns.map((t) => ({ t, live: false })), ...(st.activeTurn ? [{ t: st.activeTurn, live: true }] : [])];
  const nodes = [];
  const keep = new Set();
  const lastId = st.turns.length ? st.turns[st.turns.length - 1].id : null;
  if (st.turnsNextCursor) nodes.push(el('p', { class: 'older hint', text: 'Scroll up for older turns' }));
  for (const { t, live } of want) {
    const key = live ? null : t.state + ':' + (t.id === lastId) + ':' + t.responseParts.length;
    const cached = app.rendered.get(t.id);
    let node;
    if (cached && key !== null && cached.key === key) node = cached.node;
    else {
      node = renderTurn(t, live, t.id === lastId);
      app.rendered.set(t.id, { node, key });
    }
    keep.add(t.id);
    nodes.push(node);
  }
  for (const id of [...app.rendered.keys()]) if (!keep.has(id)) app.rendered.delete(id);
  keepFocus(log, () => place(log, nodes));
  if (nearEnd) log.scrollTop = log.scrollHeight;
  else if (firstBefore && firstBefore.isConnected) log.scrollTop += firstBefore.getBoundingClientRect().top - topBefore;
  $('chat-activity').textContent = st.activity || '';
  noteChat(app.session, app.chat, st);
  renderSessionUsage();
  const whole = changesetFor(null);
  $('chat-changes').hidden = !whole;
  if (whole) $('chat-changes').onclick = () => openChangeset(whole.uri, whole.label);
  renderPending();
  renderComposer();
}

function renderTurn(t, live, isLast) {
  const msg = t.message || { text: '' };
  const atts = (msg.attachments || []).map((a) => el('li', { class: 'attachment', text: a.label || a.type }));
  const user = el('div', { class: 'user-msg' }, el('span', { class: 'who', text: 'You' }), el('div', { class: 'text', text: msg.text }), atts.length ? el('ul', { class: 'attachments' }, ...atts) : null);
  const parts = el('div', { class: 'response' }, ...(t.responseParts || []).map((p) => renderPart(p, t, live)));
  const state = live ? 'running' : t.state;
  const footer = el('footer', { class: 'turn-foot' }, el('span', { class: 'state', text: state + (t.duration !== undefined && !live ? ` · ${(t.duration / 1000).toFixed(1)} s` : '') }));
  const usage = turnUsage(t);
  if (usage) footer.append(el('span', { class: 'usage', title: 'Tokens in and out' + (t.usage.model ? ', ' + t.usage.model : ''), text: usage }));
  if (!live && t.state === 'complete') {
    footer.append(
      el('button', { type: 'button', class: 'fork', dataset: { focusKey: 'fork:' + t.id }, onclick: () => newChatFrom('fork', t.id), text: 'Fork here' }),
      el('button', { type: 'button', class: 'side-chat', dataset: { focusKey: 'side:' + t.id }, onclick: () => newChatFrom('sideChat', t.id), text: 'Side chat' }),
    );
  }
  const perTurn = changesetFor('{turnId}', t.id);
  if (!live && perTurn) footer.append(el('button', { type: 'button', class: 'changes', dataset: { focusKey: 'changes:' + t.id }, onclick: () => openChangeset(perTurn.uri, perTurn.label), text: 'Changes' }));
  const lastPart = (t.responseParts || [])[(t.responseParts || []).length - 1];
  if (!live && isLast && t.state === 'error' && lastPart && lastPart.kind === 'error' && lastPart.resumable) {
    footer.append(el('button', { type: 'button', class: 'resume', dataset: { focusKey: 'resume:' + t.id }, onclick: () => act({ type: 'chat/turnResume', turnId: t.id }), text: 'Resume' }));
  }
  return el('article', { class: 'turn', dataset: { turnId: t.id, state }, 'aria-label': 'Turn' }, user, parts, footer);
}

function renderPart(p, t, live) {
  switch (p.kind) {
    case 'markdown': {
      const n = renderMarkdown(p.content || '', live && p.id ? t.id + '/' + p.id : undefined);
      n.classList.add('part-md');
      return n;
    }
    case 'reasoning':
      return el('details', { class: 'reasoning' }, el('summary', { text: 'Reasoning' }), el('div', { class: 'text', text: p.content || '' }));
    case 'toolCall':
      return renderTool(p.toolCall, t, live);
    case 'systemNotification':
      return el('div', { class: 'notice', text: text(p.content) });
    case 'error':
      return el('div', { class: 'error', role: 'alert', text: 'Error: ' + ((p.error && p.error.message) || 'the turn failed') });
    case 'inputRequest':
      return renderInputRequest(p, t, live, { el, act, chat: app.chat });
    case 'contentRef':
      return el('div', { class: 'notice', text: 'Content: ' + p.uri });
    default:
      return el('div', { class: 'notice', text: '(' + p.kind + ')' });
  }
}

function renderTool(tc, t, live) {
  if (!tc) return el('div');
  const box = el('div', { class: 'tool', dataset: { status: tc.status, toolCallId: tc.toolCallId } });
  box.append(
    el('div', { class: 'tool-head' }, el('strong', { text: tc.displayName || tc.toolName || 'tool' }), el('span', { class: 'badge', text: tc.status + (tc.reason ? ` (${tc.reason})` : '') })),
  );
  const inv = text(tc.pastTenseMessage) || text(tc.invocationMessage);
  if (inv) box.append(el('div', { class: 'tool-inv', text: inv }));
  const input = tc.toolInput !== undefined ? (typeof tc.toolInput === 'string' ? tc.toolInput : JSON.stringify(tc.toolInput, null, 2)) : tc.partialInput;
  if (input) box.append(el('details', { class: 'tool-input' }, el('summary', { text: 'Input' }), el('pre', { text: input })));
  if (tc.status === 'pending-confirmation' && live) {
    box.append(
      el('div', { class: 'confirm', role: 'group', 'aria-label': 'Confirm the tool call' },
        el('span', { text: text(tc.confirmationTitle) || 'Run this tool?' }),
        el('button', { type: 'button', class: 'approve', dataset: { focusKey: 'approve:' + tc.toolCallId }, onclick: () => act({ type: 'chat/toolCallConfirmed', turnId: t.id, toolCallId: tc.toolCallId, approved: true }), text: 'Approve' }),
        el('button', { type: 'button', class: 'deny', dataset: { focusKey: 'deny:' + tc.toolCallId }, onclick: () => act({ type: 'chat/toolCallConfirmed', turnId: t.id, toolCallId: tc.toolCallId, approved: false, reason: 'denied' }), text: 'Deny' }),
      ),
    );
  }
  if (tc.status === 'pending-result-confirmation' && live) {
    box.append(
      el('div', { class: 'confirm', role: 'group', 'aria-label': 'Confirm the result' },
        el('span', { text: 'Keep this result?' }),
        el('button', { type: 'button', class: 'approve', onclick: () => act({ type: 'chat/toolCallResultConfirmed', turnId: t.id, toolCallId: tc.toolCallId, approved: true }), text: 'Keep' }),
        el('button', { type: 'button', class: 'deny', onclick: () => act({ type: 'chat/toolCallResultConfirmed', turnId: t.id, toolCallId: tc.toolCallId, approved: false }), text: 'Reject' }),
      ),
    );
  }
  const result = el('div', { class: 'tool-result' });
  for (const c of tc.content || []) result.append(renderContent(c));
  if (tc.error) result.append(el('div', { class: 'error', text: typeof tc.error === 'string' ? tc.error : (tc.error.message || JSON.stringify(tc.error)) }));
  // Worker chats this call spawned: their chat's origin names the call.
  for (const c of visibleChats()) {
    if (c.origin && c.origin.kind === 'tool' && c.origin.toolCallId === tc.toolCallId && !(tc.content || []).some((x) => x.type === 'subagent' && x.resource === c.resource)) {
      result.append(workerLink(c.resource, c.title));
    }
  }
  // A call's terminal (a ! command's) shows while it runs, found by its
  // claim in the root state, and stays in sight once it completed.
  const running = !(tc.content || []).some((x) => x.type === 'terminal') && terminalOfCall(tc.toolCallId);
  if (running) result.append(terminalView(running.resource, running.title));
  const terminal = !!running || (tc.content || []).some((x) => x.type === 'terminal');
  if (result.childNodes.length) box.append(el('details', { class: 'tool-output', open: tc.status !== 'completed' || terminal ? true : null }, el('summary', { text: 'Result' }), result));
  return box;
}

function renderContent(c) {
  switch (c.type) {
    case 'text':
      return el('pre', { class: 'tool-text', text: c.text });
    case 'subagent':
      return workerLink(c.resource, c.title || c.agentName);
    case 'fileEdit':
      return renderDiff(c);
    case 'terminal':
      return terminalView(c.resource, c.title); // terminal.js
    case 'resource':
      return el('div', { class: 'notice', text: 'Resource: ' + c.uri });
    default:
      return el('div', { class: 'notice', text: '(' + c.type + ')' });
  }
}

function workerLink(resource, title) {
  return el('button', { type: 'button', class: 'worker-link', dataset: { chat: resource, focusKey: 'worker:' + resource }, onclick: () => openChat(resource), text: 'Worker chat: ' + (title || resource) });
}

// renderDiff shows a file edit: the unified diff when the host sent one,
// else the before/after texts side by side as removed and added lines.
function renderDiff(c) {
  const pre = el('pre', { class: 'diff' });
  const name = (c.after && c.after.uri) || (c.before && c.before.uri) || 'file';
  const lines = [];
  const diffText = typeof c.diff === 'string' ? c.diff : c.diff && typeof c.diff.text === 'string' ? c.diff.text : '';
  if (diffText) lines.push(...diffText.split('\n'));
  else {
    const b = c.before && typeof c.before.content === 'string' ? c.before.content.split('\n') : [];
    const a = c.after && typeof c.after.content === 'string' ? c.after.content.split('\n') : [];
    lines.push('--- ' + name, '+++ ' + name, ...b.map((l) => '-' + l), ...a.map((l) => '+' + l));
  }
  for (const l of lines) pre.append(el('span', { class: l.startsWith('+') ? 'add' : l.startsWith('-') ? 'del' : l.startsWith('@@') ? 'hunk' : '', text: l + '\n' }));
  return el('details', { class: 'file-edit', open: true }, el('summary', { text: 'Edit: ' + name }), pre);
}

// ---- changesets -----------------------------------------------------------

// changesetFor finds the chat's advertised changeset whose template holds
// placeholder (filled with value), or, with placeholder null, the one with
// no placeholder (everything the chat changed).
function changesetFor(placeholder, value) {
  for (const c of (app.chatState && app.chatState.changesets) || []) {
    const t = c.uriTemplate || '';
    if (placeholder === null ? !t.includes('{') : t.includes(placeholder)) {
      return { uri: placeholder === null ? t : t.replace(placeholder, encodeURIComponent(value)), label: c.label || 'Changes' };
    }
  }
  return null;
}

async function openChangeset(uri, label) {
  closeChangeset();
  app.changeset = { uri, label, state: { files: [] }, texts: new Map() };
  try {
    const st = await app.conn.subscribe(uri);
    if (!app.changeset || app.changeset.uri !== uri) return;
    app.changeset.state = st || { files: [] };
    app.changeset.state.files = app.changeset.state.files || [];
    renderChangeset();
  } catch (e) {
    alertError(e);
  }
}

function closeChangeset() {
  if (app.changeset) app.conn.unsubscribe(app.changeset.uri);
  app.changeset = null;
  $('changes-panel').hidden = true;
  $('changes-panel').replaceChildren();
}

// readText reads a content URI once through resourceRead.
function readText(uri) {
  const cache = app.changeset.texts;
  if (!cache.has(uri)) {
    cache.set(uri, app.conn.call('resourceRead', { channel: ROOT, uri, encoding: 'utf-8' }).then((r) => (r.encoding === 'base64' ? atob(r.data || '') : r.data || '')));
  }
  return cache.get(uri);
}

function renderChangeset() {
  $('changes-panel').hidden = false;
  renderChangesetPanel($('changes-panel'), app.changeset, { el, call: (m, p) => app.conn.call(m, p), close: closeChangeset, rerender: renderChangeset, current: () => app.changeset, readText });
}

// ---- waiting messages ------------------------------------------------------

function renderPending() {
  const st = app.chatState;
  const box = $('pending');
  // Drawn again only when what it shows changed: the chat redraws on every
  // action, and a list replaced between a button's press and its release
  // ate the click (a person's "Take back" did nothing).
  const shown = JSON.stringify([
    st.steeringMessage ? [st.steeringMessage.id, st.steeringMessage.message.text] : null,
    (st.queuedMessages || []).map((m) => [m.id, m.message.text]),
    !!st.activeTurn,
  ]);
  if (box.dataset.shown === shown) return;
  box.dataset.shown = shown;
  const items = [];
  if (st.steeringMessage) {
    items.push(
      el('li', { class: 'steering', dataset: { id: st.steeringMessage.id } },
        el('span', { class: 'kind', text: 'Steering: ' }),
        el('span', { class: 'text', text: st.steeringMessage.message.text }),
        el('button', { type: 'button', class: 'take-back', onclick: () => act({ type: 'chat/pendingMessageRemoved', kind: 'steering', id: st.steeringMessage.id }), text: 'Take back' }),
      ),
    );
  }
  const q = st.queuedMessages || [];
  q.forEach((m, i) => {
    const move = (d) => {
      const order = q.map((x) => x.id);
      [order[i], order[i + d]] = [order[i + d], order[i]];
      act({ type: 'chat/queuedMessagesReordered', order });
    };
    items.push(
      el('li', { class: 'queued', dataset: { id: m.id } },
        el('span', { class: 'kind', text: `Queued ${i + 1}: ` }),
        el('span', { class: 'text', text: m.message.text }),
        el('button', { type: 'button', class: 'up', dataset: { focusKey: 'up:' + m.id }, disabled: i === 0, 'aria-label': 'Move up: ' + m.message.text, onclick: () => move(-1), text: '↑' }),
        el('button', { type: 'button', class: 'down', dataset: { focusKey: 'down:' + m.id }, disabled: i === q.length - 1, 'aria-label': 'Move down: ' + m.message.text, onclick: () => move(1), text: '↓' }),
        el('button', { type: 'button', class: 'take-back', dataset: { focusKey: 'take:' + m.id }, onclick: () => act({ type: 'chat/pendingMessageRemoved', kind: 'queued', id: m.id }), text: 'Take back' }),
      ),
    );
  });
  const hint = q.length && !st.activeTurn ? el('p', { class: 'hint', text: 'The queue waits: the next turn you start runs first, then these.' }) : null;
  keepFocus(box, () => box.replaceChildren(...(items.length ? [el('h2', { class: 'sr-only', text: 'Waiting messages' }), el('ul', {}, ...items), hint] : []).filter(Boolean)));
}

// ---- compose ----------------------------------------------------------------

function renderComposer() {
  const st = app.chatState;
  const online = app.conn && app.conn.ready;
  const running = !!(st && st.activeTurn);
  const readOnly = !!(st && st.interactivity && st.interactivity !== 'full');
  $('message').readOnly = readOnly;
  $('message').placeholder = readOnly ? 'This chat is read-only (a worker chat, say).' : '';
  $('send').disabled = !online || !st || readOnly;
  $('send').textContent = running ? 'Queue' : 'Send';
  $('steer').disabled = !online || !running || readOnly;
  $('stop').disabled = !online || !running;
}

function act(action) {
  showError('compose-error', '');
  try {
    return app.conn.dispatch(app.chat, action);
  } catch (e) {
    alertError(e);
    return 0;
  }
}

function message() {
  const m = { text: $('message').value, origin: { kind: 'user' } };
  if (app.attachments.length) m.attachments = app.attachments.map((a) => a.attachment);
  return m;
}

function clearCompose() {
  $('message').value = '';
  app.attachments = [];
  renderAttachments();
  act({ type: 'chat/draftChanged' });
}

function send(kind) {
  const st = app.chatState;
  if (!st || !$('message').value.trim()) return;
  const msg = message();
  let seq;
  if (kind === 'steer') seq = act({ type: 'chat/pendingMessageSet', kind: 'steering', id: uuid(), message: msg });
  else if (st.activeTurn) seq = act({ type: 'chat/pendingMessageSet', kind: 'queued', id: uuid(), message: msg });
  else seq = act({ type: 'chat/turnStarted', turnId: uuid(), startedAt: new Date().toISOString(), message: msg });
  if (seq) clearCompose();
}

function stop() {
  const t = app.chatState && app.chatState.activeTurn;
  if (!t) return;
  const started = Date.parse(t.startedAt);
  act({ type: 'chat/turnCancelled', turnId: t.id, duration: isNaN(started) ? 0 : Math.max(0, Date.now() - started) });
}

let draftTimer = 0;
function draftEdited() {
  app.lastLocalDraft = Date.now();
  clearTimeout(draftTimer);
  draftTimer = setTimeout(() => {
    if (!app.chatState || !app.conn.ready) return;
    const t = $('message').value;
    act(t ? { type: 'chat/draftChanged', draft: { text: t, origin: { kind: 'user' } } } : { type: 'chat/draftChanged' });
  }, 250);
}

// applyRemoteDraft shows another client's draft, unless this page's
// person is typing right now (their own edit wins and goes out shortly).
function applyRemoteDraft() {
  if (Date.now() - app.lastLocalDraft < 1000) return;
  const t = (app.chatState.draft && app.chatState.draft.text) || '';
  if ($('message').value !== t) $('message').value = t;
}

async function newChatFrom(kind, turnId) {
  const chat = 'ahp-chat:/' + uuid();
  try {
    await app.conn.call('createChat', { channel: app.session, chat, source: { kind, chat: app.chat, turnId } });
    await openChat(chat);
  } catch (e) {
    alertError(e);
  }
}

async function newChat() {
  const chat = 'ahp-chat:/' + uuid();
  try {
    await app.conn.call('createChat', { channel: app.session, chat });
    await openChat(chat);
  } catch (e) {
    alertError(e);
  }
}

let closeArmed = 0;
async function closeChat() {
  const b = $('close-chat');
  if (Date.now() - closeArmed > 4000) {
    closeArmed = Date.now();
    b.textContent = 'Really close?';
    setTimeout(() => (b.textContent = 'Close chat'), 4000);
    return;
  }
  closeArmed = 0;
  b.textContent = 'Close chat';
  try {
    await app.conn.call('disposeChat', { channel: app.chat });
  } catch (e) {
    alertError(e);
  }
}

function renameStart() {
  const f = $('rename-form');
  f.hidden = false;
  $('rename').hidden = true;
  $('rename-input').value = (app.chatState && app.chatState.title) || '';
  $('rename-input').focus();
  $('rename-input').select();
}

function renameSave(ev) {
  ev.preventDefault();
  const title = $('rename-input').value.trim();
  if (title) act({ type: 'session/titleChanged', title });
  $('rename-form').hidden = true;
  $('rename').hidden = false;
}

// ---- attachments ---------------------------------------------------------------

function renderAttachments() {
  $('attachments').replaceChildren(
    ...app.attachments.map((a, i) =>
      el('li', { class: 'chip' }, el('span', { text: a.attachment.label }), el('button', { type: 'button', 'aria-label': 'Remove ' + a.attachment.label, onclick: () => { app.attachments.splice(i, 1); renderAttachments(); }, text: '×' })),
    ),
  );
}

async function attachFiles() {
  const input = $('attach');
  for (const f of input.files) {
    if (f.size > MAX_ATTACH_BYTES) {
      showError('compose-error', `${f.name} is larger than ${MAX_ATTACH_BYTES >> 20} MiB`);
      continue;
    }
    const buf = new Uint8Array(await f.arrayBuffer());
    let bin = '';
    for (let i = 0; i < buf.length; i += 0x8000) bin += String.fromCharCode(...buf.subarray(i, i + 0x8000));
    app.attachments.push({ attachment: { type: 'embeddedResource', label: f.name, contentType: f.type || 'application/octet-stream', data: btoa(bin) } });
  }
  input.value = '';
  renderAttachments();
}

// ---- completions ---------------------------------------------------------------

let compTimer = 0;
function maybeComplete() {
  clearTimeout(compTimer);
  const box = $('message');
  const before = box.value.slice(0, box.selectionStart);
  const m = /(^|\s)(\S+)$/.exec(before);
  if (!m || !app.triggers.includes(m[2][0])) return hideCompletions();
  compTimer = setTimeout(async () => {
    const seq = ++app.completion.seq;
    try {
      const r = await app.conn.call('completions', { channel: app.chat, kind: 'userMessage', text: box.value, offset: box.selectionStart });
      if (seq !== app.completion.seq) return;
      showCompletions(r.items || [], box.selectionStart - m[2].length, box.selectionStart);
    } catch {
      hideCompletions();
    }
  }, 120);
}

function showCompletions(items, start, end) {
  const c = app.completion;
  c.items = items.slice(0, 50);
  c.index = 0;
  c.start = start;
  c.end = end;
  const list = $('completions');
  if (!c.items.length) return hideCompletions();
  list.replaceChildren(
    ...c.items.map((it, i) =>
      el('li', { role: 'option', id: 'completion-' + i, 'aria-selected': i === 0 ? 'true' : 'false', onmousedown: (ev) => { ev.preventDefault(); acceptCompletion(i); } },
        el('span', { class: 'insert', text: it.insertText }),
        it.attachment && it.attachment.label && it.attachment.label !== it.insertText ? el('span', { class: 'hint', text: ' ' + it.attachment.label }) : null,
      ),
    ),
  );
  list.hidden = false;
  $('message').setAttribute('aria-expanded', 'true');
  $('message').setAttribute('aria-activedescendant', 'completion-0');
}

function hideCompletions() {
  $('completions').hidden = true;
  app.completion.items = [];
  $('message').setAttribute('aria-expanded', 'false');
  $('message').removeAttribute('aria-activedescendant');
}

function moveCompletion(d) {
  const c = app.completion;
  c.index = (c.index + d + c.items.length) % c.items.length;
  [...$('completions').children].forEach((li, i) => li.setAttribute('aria-selected', i === c.index ? 'true' : 'false'));
  $('message').setAttribute('aria-activedescendant', 'completion-' + c.index);
}

function acceptCompletion(i) {
  const c = app.completion;
  const it = c.items[i];
  if (!it) return;
  const box = $('message');
  const start = it.rangeStart ?? c.start;
  const end = it.rangeEnd ?? c.end;
  box.value = box.value.slice(0, start) + it.insertText + box.value.slice(end);
  const at = start + it.insertText.length;
  box.setSelectionRange(at, at);
  if (it.attachment && it.attachment.type && it.attachment.type !== 'simple') app.attachments.push({ attachment: it.attachment });
  renderAttachments();
  hideCompletions();
  draftEdited();
  box.focus();
}

// ---- wiring ---------------------------------------------------------------------

function wire() {
  $('token-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const token = $('token-input').value.trim();
    $('token-input').value = '';
    if (!token) return;
    let ok = false;
    try {
      ok = await probe(token);
    } catch (e) {
      $('token-error').textContent = String(e.message || e);
      return;
    }
    if (!ok) {
      tokenPage('That token was not accepted.');
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, token);
    connect(token);
  });
  $('forget').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    if (app.conn) app.conn.stop();
    location.reload();
  });
  $('new-session-form').addEventListener('submit', createSession);
  $('filter').addEventListener('input', renderSessions);
  $('show-archived').addEventListener('change', renderSessions);
  initNotify({ app, openSession });
  $('back').addEventListener('click', () => (document.body.dataset.view = 'sessions'));
  $('new-chat').addEventListener('click', newChat);
  $('rename').addEventListener('click', renameStart);
  $('rename-form').addEventListener('submit', renameSave);
  $('close-chat').addEventListener('click', closeChat);
  $('composer').addEventListener('submit', (ev) => {
    ev.preventDefault();
    send('send');
  });
  $('steer').addEventListener('click', () => send('steer'));
  $('stop').addEventListener('click', stop);
  $('attach').addEventListener('change', attachFiles);
  const box = $('message');
  box.addEventListener('input', () => {
    draftEdited();
    maybeComplete();
  });
  box.addEventListener('blur', () => setTimeout(hideCompletions, 150));
  box.addEventListener('keydown', (ev) => {
    const open = !$('completions').hidden && app.completion.items.length;
    if (open && ev.key === 'ArrowDown') return ev.preventDefault(), moveCompletion(1);
    if (open && ev.key === 'ArrowUp') return ev.preventDefault(), moveCompletion(-1);
    if (open && (ev.key === 'Enter' || ev.key === 'Tab')) return ev.preventDefault(), acceptCompletion(app.completion.index);
    if (open && ev.key === 'Escape') return ev.preventDefault(), hideCompletions();
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      send('send');
    }
  });
  $('turns').addEventListener('scroll', loadOlder);
  wireSearch(app, openSession); // search.js
}

// loadOlder pages older turns in when the log is scrolled to its top.
async function loadOlder() {
  const st = app.chatState;
  if (!st || !st.turnsNextCursor || app.loadingOlder || $('turns').scrollTop > 40) return;
  app.loadingOlder = true;
  try {
    await app.conn.call('fetchTurns', { channel: app.chat, cursor: st.turnsNextCursor });
  } catch (e) {
    alertError(e);
  } finally {
    app.loadingOlder = false;
  }
}

document.body.dataset.view = 'sessions';
boot();
