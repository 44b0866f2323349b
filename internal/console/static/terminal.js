// Terminals, drawn live by xterm.js (vendored: ./vendor/xterm.mjs): the
// terminal a ! command runs in, inside its turn, and the host's terminals
// (RootState.terminals) in the Terminals panel, where a new one can be
// opened. A view subscribes to the terminal's channel, writes the
// snapshot's output and then each terminal/data; what a person types goes
// out as terminal/input. Whether they may type is the host's to say (root
// or the terminal's opener): a refused input turns the view read-only,
// with the reason.
//
// xterm.js writes <style> elements at run time; the page's content
// security policy admits only those carrying the page's nonce
// (internal/console styleNonce), so every <style> this page makes is
// stamped with it.

import { Terminal } from './vendor/xterm.mjs';
import { ROOT, uuid } from './proto.js';

let app;
let el;
let $;

// MAX_VIEWS bounds the ! command views kept (each is an xterm and a
// subscription); the least recently drawn one goes first.
const MAX_VIEWS = 12;
const views = new Map(); // terminal URI -> TermView (! commands, in turns)
let panelView = null; // the Terminals panel's open view

function stampStyles() {
  const link = document.querySelector('link[nonce]');
  const nonce = link && link.nonce;
  if (!nonce || document.createElement.stamped) return;
  const create = document.createElement.bind(document);
  const stamped = (tag, opts) => {
    const n = create(tag, opts);
    if (String(tag).toLowerCase() === 'style') n.nonce = nonce;
    return n;
  };
  stamped.stamped = true;
  document.createElement = stamped;
}

// cellWidth is the width of one character of the terminals' font.
let cellWidthPx = 0;
function cellWidth() {
  if (cellWidthPx) return cellWidthPx;
  const probe = el('span', { class: 'term-probe', text: 'M'.repeat(40) });
  probe.style.font = '13px ui-monospace, monospace';
  probe.style.position = 'absolute';
  probe.style.visibility = 'hidden';
  document.body.append(probe);
  cellWidthPx = probe.getBoundingClientRect().width / 40 || 8;
  probe.remove();
  return cellWidthPx;
}

// colsFor is how many columns fit width pixels (20 at least).
function colsFor(width) {
  return Math.max(20, Math.min(200, Math.floor((width - 12) / cellWidth())));
}

// text is a terminal state's kept output, in order.
function text(st) {
  return (st.content || []).map((p) => (p.type === 'command' ? p.output || '' : p.value || '')).join('');
}

class TermView {
  // shrink: once the process exited, the view keeps only the rows its
  // output used (a ! command's, in its turn).
  constructor(uri, title, rows, shrink) {
    this.uri = uri;
    this.shrink = !!shrink;
    this.title = title || uri;
    this.readOnly = '';
    this.exit = undefined;
    this.meta = el('div', { class: 'term-meta' }, el('span', { class: 'term-title', text: this.title }), el('span', { class: 'term-state', role: 'status' }));
    this.screen = el('div', { class: 'term-screen' });
    this.node = el('div', { class: 'term-view', dataset: { terminal: uri }, role: 'group', 'aria-label': 'Terminal: ' + this.title }, this.meta, this.screen);
    this.term = new Terminal({
      rows,
      cols: 80,
      fontSize: 13,
      fontFamily: 'ui-monospace, monospace',
      scrollback: 5000,
      convertEol: false,
      screenReaderMode: false,
      theme: { background: '#000000', foreground: '#e6edf3' },
    });
    this.term.onData((data) => this.input(data));
    this.opened = false;
    this.text = ''; // what was written, for the tests' and a person's copy
    this.subscribe();
  }

  // open attaches xterm once the node is in the page (it measures).
  open() {
    if (this.opened || !this.node.isConnected) return;
    this.opened = true;
    this.term.open(this.screen);
    this.fit();
  }

  fit() {
    if (!this.opened) return;
    const w = this.node.clientWidth;
    if (w <= 0) return;
    const cols = colsFor(w);
    if (cols === this.term.cols) return;
    this.term.resize(cols, this.term.rows);
    // The pty follows only for a terminal this page opened: another
    // client's (a VS Code window's) keeps the size its owner gave it.
    if (this.ownsSize && !this.readOnly) {
      try {
        app.conn.dispatch(this.uri, { type: 'terminal/resized', cols, rows: this.term.rows });
      } catch {
        // offline: the next fit sends it
      }
    }
  }

  async subscribe() {
    try {
      const st = await app.conn.subscribe(this.uri);
      this.reset(st || {});
    } catch (e) {
      this.state('cannot show: ' + (e.message || e));
      this.setReadOnly('gone');
    }
  }

  reset(st) {
    this.term.reset();
    this.text = '';
    this.write(text(st));
    if (st.title) this.retitle(st.title);
    const exited = (st.lifecycle && st.lifecycle.status === 'exited') || st.exitCode !== undefined;
    if (exited) this.exited((st.lifecycle && st.lifecycle.exitCode) ?? st.exitCode);
    else this.state('running');
  }

  write(data) {
    if (!data) return;
    this.text += data;
    if (this.text.length > 1 << 20) this.text = this.text.slice(-(1 << 19));
    this.term.write(data);
  }

  retitle(t) {
    this.title = t;
    this.meta.querySelector('.term-title').textContent = t;
    this.node.setAttribute('aria-label', 'Terminal: ' + t);
  }

  state(s) {
    this.meta.querySelector('.term-state').textContent = s + (this.readOnly ? ` · read-only (${this.readOnly})` : '');
  }

  exited(code) {
    this.exit = code;
    this.state('exited' + (code !== undefined && code !== null ? ` with ${code}` : ''));
    this.setReadOnly('exited');
    if (this.shrink) {
      // After what was written is parsed: the rows the output used.
      this.term.write('', () => {
        const b = this.term.buffer.active;
        this.term.resize(this.term.cols, Math.max(2, Math.min(12, b.baseY + b.cursorY + (b.cursorX > 0 ? 1 : 0))));
      });
    }
  }

  setReadOnly(why) {
    this.readOnly = why;
    this.term.options.disableStdin = true;
    this.node.dataset.readOnly = why;
  }

  input(data) {
    if (this.readOnly) return;
    try {
      app.conn.dispatch(this.uri, { type: 'terminal/input', data });
    } catch (e) {
      this.state('not sent: ' + (e.message || e));
    }
  }

  action(env) {
    const a = env.action || {};
    if (env.rejectionReason) {
      if (env.origin && env.origin.clientId === app.conn.clientId && a.type === 'terminal/input') {
        this.setReadOnly(env.rejectionReason);
        this.state('running');
      }
      return;
    }
    switch (a.type) {
      case 'terminal/data':
        this.write(a.data);
        return;
      case 'terminal/cleared':
        this.term.clear();
        this.text = '';
        return;
      case 'terminal/titleChanged':
        this.retitle(a.title);
        return;
      case 'terminal/exited':
        this.exited(a.exitCode);
        return;
    }
  }

  dispose() {
    app.conn.unsubscribe(this.uri);
    this.term.dispose();
    this.node.remove();
  }
}

// terminalView is the live view of a ! command's terminal, for its turn;
// one per terminal, kept across the turn's redraws.
export function terminalView(uri, title) {
  let v = views.get(uri);
  if (v) views.delete(uri);
  else v = new TermView(uri, title, 12, true);
  views.set(uri, v);
  while (views.size > MAX_VIEWS) {
    const [old, ov] = views.entries().next().value;
    views.delete(old);
    ov.dispose();
  }
  // The turn puts the node in the page after this returns.
  requestAnimationFrame(() => v.open());
  return v.node;
}

// terminalOfCall is the host terminal a tool call holds (its claim names
// the call), undefined when none: a ! command's while it runs, before its
// result names it.
export function terminalOfCall(toolCallId) {
  if (!toolCallId) return undefined;
  return ((app.root && app.root.terminals) || []).find((t) => t.claim && t.claim.toolCallId === toolCallId);
}

// ---- the Terminals panel ----------------------------------------------------

function renderList() {
  const list = $('terminals-list');
  const terms = (app.root && app.root.terminals) || [];
  list.replaceChildren(
    ...terms.map((t) => {
      const exited = (t.lifecycle && t.lifecycle.status === 'exited') || t.exitCode !== undefined;
      const current = panelView && panelView.uri === t.resource;
      return el('li', { dataset: { terminal: t.resource } },
        el('button', { type: 'button', 'aria-current': current ? 'true' : null, onclick: () => showInPanel(t.resource, t.title), text: (t.title || t.resource) + (exited ? ' (exited)' : '') }));
    }),
  );
  if (!terms.length) list.append(el('li', { class: 'hint', text: 'No terminal is open on the host.' }));
}

function showInPanel(uri, title, mine) {
  if (panelView && panelView.uri === uri) return;
  if (panelView) panelView.dispose();
  panelView = new TermView(uri, title, narrow() ? 14 : 22);
  const info = ((app.root && app.root.terminals) || []).find((t) => t.resource === uri);
  panelView.ownsSize = mine || !!(info && info.claim && info.claim.kind === 'client' && info.claim.clientId === app.conn.clientId);
  $('terminal-host').replaceChildren(panelView.node);
  panelView.open();
  renderList();
  panelView.term.focus();
}

function narrow() {
  return window.matchMedia('(max-width: 720px)').matches;
}

async function newTerminal() {
  const uri = 'ahp-terminal:/' + uuid();
  $('terminals-error').textContent = '';
  const width = $('terminal-host').clientWidth || $('terminals-panel').clientWidth || 640;
  try {
    await app.conn.call('createTerminal', { channel: uri, claim: { kind: 'client', clientId: app.conn.clientId }, cols: colsFor(width), rows: narrow() ? 14 : 22 });
    showInPanel(uri, 'Terminal', true);
  } catch (e) {
    $('terminals-error').textContent = String(e.message || e);
  }
}

// installTerminals wires the Terminals panel and the terminal channels.
export function installTerminals(theApp, tools) {
  app = theApp;
  ({ el, $ } = tools);
  stampStyles();
  $('new-terminal').addEventListener('click', newTerminal);
  app.hook('panel', (name) => {
    if (name === 'terminals') renderList();
    else if (panelView) {
      panelView.dispose();
      panelView = null;
      $('terminal-host').replaceChildren();
    }
  });
  app.hook('action', (env) => {
    if (env.channel === ROOT) {
      const a = env.action || {};
      if (a.type === 'root/terminalsChanged' && !env.rejectionReason) {
        app.root.terminals = a.terminals || [];
        if (!$('terminals-panel').hidden) renderList();
        app.redraw(); // a running call's terminal may have opened
      }
      return;
    }
    const v = views.get(env.channel) || (panelView && panelView.uri === env.channel ? panelView : null);
    if (v) v.action(env);
  });
  app.hook('snapshot', (resource, state) => {
    const v = views.get(resource) || (panelView && panelView.uri === resource ? panelView : null);
    if (v) v.reset(state || {});
  });
  let resizeTimer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (panelView) panelView.fit();
      for (const v of views.values()) v.fit();
    }, 150);
  });
}

// For the browser tests and a person's devtools: what a terminal view shows.
export function terminalText(uri) {
  const v = views.get(uri) || (panelView && panelView.uri === uri ? panelView : null);
  return v ? v.text : null;
}

// terminalSize is a terminal view's columns and rows, null when none.
export function terminalSize(uri) {
  const v = views.get(uri) || (panelView && panelView.uri === uri ? panelView : null);
  return v ? { cols: v.term.cols, rows: v.term.rows } : null;
}
