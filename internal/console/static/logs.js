// Host logs: the daemon's own log records, from the OTLP log channel
// (internal/otlp) the host advertises in initialize's telemetry.logs
// ("ahp-otlp://logs/{level}"). The panel subscribes at the picked level
// while it is open and shows each otlp/exportLogs record as a line; the
// level filter also hides the lines already shown below it. Nothing is
// replayed (the channel is stateless): the panel shows what arrived since
// it opened. It keeps the newest MAX_LINES.
//
// Reading the logs needs the grant host:logs; a refusal shows in the
// panel.

let app;
let el;
let $;

const MAX_LINES = 1000;
const LEVELS = { trace: 1, debug: 5, info: 9, warn: 13, error: 17, fatal: 21 };

const logs = {
  channel: '', // the channel subscribed to now, '' when none
  open: false,
  count: 0,
};

function template() {
  const t = app.conn && app.conn.init && app.conn.init.telemetry;
  return t && t.logs;
}

function levelName(sev) {
  let name = 'trace';
  for (const [n, min] of Object.entries(LEVELS)) if (sev >= min) name = n;
  return name;
}

function value(v) {
  if (!v || typeof v !== 'object') return '';
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return String(v.intValue);
  if ('doubleValue' in v) return String(v.doubleValue);
  if ('boolValue' in v) return String(v.boolValue);
  if (v.arrayValue) return '[' + (v.arrayValue.values || []).map(value).join(', ') + ']';
  if (v.kvlistValue) return '{' + (v.kvlistValue.values || []).map((kv) => kv.key + '=' + value(kv.value)).join(' ') + '}';
  return '';
}

function when(nanos) {
  const ms = Number(BigInt(nanos || '0') / 1000000n);
  if (!ms) return '';
  return new Date(ms).toLocaleTimeString();
}

// show adds the records of one export.
function show(payload) {
  const list = $('log-lines');
  const min = LEVELS[$('log-level').value] || 1;
  const atEnd = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  for (const rl of (payload && payload.resourceLogs) || []) {
    for (const sl of rl.scopeLogs || []) {
      for (const r of sl.logRecords || []) {
        const sev = r.severityNumber || 0;
        const level = levelName(sev);
        const attrs = (r.attributes || []).map((kv) => `${kv.key}=${value(kv.value)}`).join(' ');
        const li = el('li', { dataset: { level, severity: String(sev) } },
          el('time', { text: when(r.timeUnixNano) + ' ' }),
          el('span', { class: 'lvl', text: (r.severityText || level).toUpperCase() }),
          el('span', { class: 'body', text: value(r.body) }),
          attrs ? el('span', { class: 'attrs', text: ' ' + attrs }) : null,
        );
        li.hidden = sev < min;
        list.append(li);
        logs.count++;
      }
    }
  }
  while (list.children.length > MAX_LINES) list.firstElementChild.remove();
  if (atEnd) list.scrollTop = list.scrollHeight;
  status();
}

function status(extra) {
  const shown = [...$('log-lines').children].filter((n) => !n.hidden).length;
  $('logs-status').textContent = extra || `${shown} shown of ${$('log-lines').children.length} kept, at ${$('log-level').value} and above`;
}

// follow subscribes at the picked level, and lets the old level go.
async function follow() {
  const t = template();
  if (!t) {
    status('This host serves no log channel.');
    return;
  }
  const want = logs.open ? t.replace('{level}', $('log-level').value) : '';
  if (want === logs.channel) return;
  const old = logs.channel;
  logs.channel = want;
  if (want) {
    try {
      await app.conn.subscribe(want);
    } catch (e) {
      if (logs.channel === want) logs.channel = '';
      status('Cannot read the logs: ' + (e.message || e));
      return;
    }
  }
  if (old) app.conn.unsubscribe(old);
  status();
}

function filter() {
  const min = LEVELS[$('log-level').value] || 1;
  for (const li of $('log-lines').children) li.hidden = Number(li.dataset.severity) < min;
  follow();
  status();
}

// installLogs wires the Logs panel.
export function installLogs(theApp, tools) {
  app = theApp;
  ({ el, $ } = tools);
  $('log-level').addEventListener('change', filter);
  app.hook('panel', (name) => {
    logs.open = name === 'logs';
    follow();
  });
  app.hook('notification', (method, p) => {
    if (method === 'otlp/exportLogs' && p.channel === logs.channel) show(p.payload);
  });
  app.hook('ready', () => {
    // A daemon that restarted forgot the subscription: take it again.
    if (logs.channel && !app.conn.subs.has(logs.channel)) {
      logs.channel = '';
      follow();
    }
  });
}
