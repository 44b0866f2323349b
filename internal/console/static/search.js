// Find and keep: the search box over every session's titles and turns
// (x-ahpd/search) and the session header's Export (the session's chats
// whole, as Markdown or JSON, downloaded). app.js calls wireSearch once;
// everything else here reaches the page through the hooks it is given.

const $ = (id) => document.getElementById(id);
const SEARCH_LIMIT = 50;
const FIND_PAGES = 200; // fetchTurns pages to look through for a hit's turn
const EXPORT_VIEW = 20; // turns an exported chat is subscribed with, then paged by fetchTurns
const EXPORT_PAGES = 10000; // fetchTurns pages one exported chat may take
const PAGE_WAIT_MS = 30000; // how long a fetchTurns page may take to arrive

// pageWaiters: the chat whose fetchTurns page an export awaits → what to
// call with it (the page arrives as a chat/turnsLoaded action; tapAction).
const pageWaiters = new Map();

// tapAction sees every action envelope before app.js reduces it, and
// hands on the chat/turnsLoaded page an export is waiting for.
export function tapAction(env) {
  const a = env.action || {};
  if (a.type !== 'chat/turnsLoaded') return;
  const take = pageWaiters.get(env.channel);
  if (take) take(a);
}

// wireSearch wires the search form and the Export button. app is the
// console's state (app.conn, app.session, app.sessionState, app.chat,
// app.chatState); openSession(uri, chat) opens a session at a chat.
export function wireSearch(app, openSession) {
  $('search-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    search(app, openSession);
  });
  $('search-input').addEventListener('input', () => {
    if (!$('search-input').value.trim()) clearResults();
  });
  $('export').addEventListener('click', () => exportSession(app, $('export-format').value));
}

function clearResults() {
  $('search-results').replaceChildren();
  $('search-results').hidden = true;
  $('search-error').textContent = '';
}

async function search(app, openSession) {
  const query = $('search-input').value.trim();
  clearResults();
  if (!query) return;
  let res;
  try {
    res = await app.conn.call('x-ahpd/search', { channel: 'ahp-root://', query, limit: SEARCH_LIMIT });
  } catch (e) {
    $('search-error').textContent = String(e.message || e);
    return;
  }
  const list = $('search-results');
  const items = res.items || [];
  if (!items.length) {
    list.append(li('li', { class: 'hint' }, 'No hits.'));
  }
  for (const h of items) {
    const where = h.kind === 'turn' ? h.title || 'Chat' : h.kind === 'chatTitle' ? 'chat title' : 'session title';
    const button = li('button', { type: 'button', class: 'hit' },
      li('span', { class: 'hit-title' }, h.sessionTitle || h.session),
      li('span', { class: 'hint' }, ' · ' + where),
      li('span', { class: 'hit-text' }, ...marked(h.snippet, h.matches)));
    button.dataset.session = h.session;
    if (h.chat) button.dataset.chat = h.chat;
    if (h.turnId) button.dataset.turnId = h.turnId;
    button.addEventListener('click', () => openHit(app, openSession, h));
    list.append(li('li', {}, button));
  }
  list.hidden = false;
}

// li makes an element with attributes and children (text never as HTML).
function li(tag, attrs, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') n.className = v;
    else n.setAttribute(k, v);
  }
  for (const c of children) n.append(c);
  return n;
}

// marked is a snippet as text nodes, its matched words in <mark>; matches
// are [start, end) in UTF-16 units, which is what JavaScript strings count.
function marked(snippet, matches) {
  const out = [];
  let at = 0;
  for (const [from, to] of matches || []) {
    if (from < at || to > snippet.length || from >= to) continue;
    out.push(snippet.slice(at, from), li('mark', {}, snippet.slice(from, to)));
    at = to;
  }
  out.push(snippet.slice(at));
  return out;
}

// openHit opens the hit's session at its chat and, for a turn, pages older
// turns in until the turn is shown, then scrolls to it.
async function openHit(app, openSession, h) {
  await openSession(h.session, h.chat);
  if (!h.turnId || app.chat !== h.chat) return;
  const find = () => document.querySelector(`#turns .turn[data-turn-id="${CSS.escape(h.turnId)}"]`);
  for (let page = 0; page < FIND_PAGES && app.chat === h.chat; page++) {
    const node = await settle(find, 2000);
    if (node) {
      node.classList.add('search-hit');
      node.setAttribute('tabindex', '-1');
      node.scrollIntoView({ block: 'center' });
      node.focus({ preventScroll: true });
      return;
    }
    const st = app.chatState;
    if (!st || !st.turnsNextCursor) return;
    const before = st.turns.length;
    try {
      await app.conn.call('fetchTurns', { channel: h.chat, cursor: st.turnsNextCursor });
    } catch (e) {
      $('search-error').textContent = String(e.message || e);
      return;
    }
    // The page arrives as chat/turnsLoaded and app.js reduces it in.
    await settle(() => app.chatState && app.chatState.turns.length > before, 5000);
  }
}

// settle polls f until it answers something truthy or ms pass.
async function settle(f, ms) {
  const until = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v || Date.now() > until) return v;
    await new Promise((r) => setTimeout(r, 30));
  }
}

// exportSession reads every visible chat of the open session whole, as
// ahpd export does (a subscribe with a view of the newest turns, then
// fetchTurns to the first, so no frame holds a long chat whole), and
// downloads it. The open chat is shown the pages too (its view pages in
// the same way).
async function exportSession(app, format) {
  const st = app.sessionState;
  if (!st) return;
  $('export').disabled = true;
  try {
    const ex = { session: app.session, title: st.title || '', chats: [] };
    let pages = 0;
    for (const c of st.chats.filter((c) => c.interactivity !== 'hidden')) {
      let read;
      try {
        read = await readChatWhole(app, c.resource);
      } finally {
        if (c.resource !== app.chat) app.conn.unsubscribe(c.resource);
      }
      pages += read.pages;
      const chat = { chat: c.resource, title: c.title || '', turns: read.turns };
      if (read.activeTurn) chat.activeTurn = read.activeTurn;
      ex.chats.push(chat);
    }
    const json = format === 'json';
    const text = json ? JSON.stringify(ex, null, 2) + '\n' : markdown(ex, new Date());
    const name = (slug(ex.title) || 'session') + (json ? '.json' : '.md');
    const type = json ? 'application/json' : 'text/markdown';
    app.lastExport = { name, type, text, pages }; // for the browser tests' reads
    const url = URL.createObjectURL(new Blob([text], { type }));
    const a = li('a', { href: url, download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    $('search-error').textContent = 'export: ' + String(e.message || e);
  } finally {
    $('export').disabled = false;
  }
}

// readChatWhole subscribes to chat with a view of its newest turns and
// asks for older pages until the first turn; it answers the turns, oldest
// first, the turn still running, if any, and how many pages it fetched.
async function readChatWhole(app, chat) {
  const r = await app.conn.call('subscribe', { channel: chat, view: { turns: EXPORT_VIEW } });
  const state = (r.snapshot && r.snapshot.state) || {};
  let turns = state.turns || [];
  const seen = new Set(turns.map((t) => t.id));
  let cursor = state.turnsNextCursor;
  let page = 0;
  for (; cursor; page++) {
    if (page >= EXPORT_PAGES) throw new Error(`${chat}: more than ${EXPORT_PAGES} pages of turns`);
    const next = awaitPage(chat);
    try {
      await app.conn.call('fetchTurns', { channel: chat, cursor });
    } catch (e) {
      next.cancel();
      throw e;
    }
    const a = await next.page;
    const older = (a.turns || []).filter((t) => !seen.has(t.id));
    for (const t of older) seen.add(t.id);
    if (!older.length && a.turnsNextCursor === cursor) throw new Error(`${chat}: fetchTurns made no progress`);
    turns = [...older, ...turns];
    cursor = a.turnsNextCursor;
  }
  return { turns, activeTurn: state.activeTurn, pages: page };
}

// awaitPage is the next chat/turnsLoaded page of chat (the host publishes
// it before it answers fetchTurns), or an error after PAGE_WAIT_MS.
function awaitPage(chat) {
  let timer;
  const done = () => {
    clearTimeout(timer);
    pageWaiters.delete(chat);
  };
  const page = new Promise((resolve, reject) => {
    timer = setTimeout(() => {
      done();
      reject(new Error(`${chat}: no page within ${PAGE_WAIT_MS / 1000} s of fetchTurns`));
    }, PAGE_WAIT_MS);
    pageWaiters.set(chat, (a) => {
      done();
      resolve(a);
    });
  });
  return { page, cancel: done };
}

function slug(s) {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 60);
}

function oneLine(s) {
  return String(s || '').split(/\s+/).filter(Boolean).join(' ');
}

function str(v) {
  if (!v) return '';
  return typeof v === 'string' ? v : v.markdown || '';
}

// markdown is the export as a document, as ahpd export writes it: each
// turn's message and answer, a tool call summarised in a line.
function markdown(ex, now) {
  const out = [`# ${ex.title || '(untitled)'}\n\nSession \`${ex.session}\`, exported ${now.toISOString()}.\n`];
  for (const c of ex.chats) {
    out.push(`\n## ${c.title || '(untitled)'}\n\nChat \`${c.chat}\`, ${c.turns.length} turns.\n`);
    for (const t of c.turns) out.push(turnMarkdown(t, t.state));
    if (c.activeTurn) out.push(turnMarkdown(c.activeTurn, 'running'));
  }
  return out.join('');
}

function turnMarkdown(t, state) {
  const out = ['\n### User\n\n'];
  if (t.startedAt) out.push(`<sub>turn ${t.id}, ${t.startedAt}</sub>\n\n`);
  out.push(((t.message && t.message.text) || '').trim() + '\n');
  for (const a of (t.message && t.message.attachments) || []) out.push(`\n- attached: ${a.label || a.uri || 'an attachment'}\n`);
  out.push('\n### Assistant\n\n');
  let wrote = false;
  for (const p of t.responseParts || []) {
    const line = partMarkdown(p);
    if (line) {
      out.push(line + '\n\n');
      wrote = true;
    }
  }
  if (state === 'cancelled') out.push('_(cancelled)_\n\n');
  else if (state === 'running') out.push('_(still running when exported)_\n\n');
  else if (!wrote) out.push('_(no answer)_\n\n');
  return out.join('');
}

function partMarkdown(p) {
  switch (p.kind) {
    case 'markdown':
      return (p.content || '').trim();
    case 'toolCall': {
      const tc = p.toolCall || {};
      const what = oneLine(str(tc.pastTenseMessage) || str(tc.invocationMessage));
      return `> **Tool** \`${tc.displayName || tc.toolName}\` (${tc.status})` + (what ? ': ' + what : '');
    }
    case 'systemNotification':
      return '> _' + oneLine(str(p.content)) + '_';
    case 'inputRequest':
      return p.response ? '> **Asked**, answered: ' + oneLine(p.response) : '> **Asked** the user';
    case 'error':
      return '> **Error**' + (p.error ? ': ' + oneLine(p.error.message) : '');
    case 'contentRef':
      return '> content: ' + p.uri;
  }
  return '';
}
