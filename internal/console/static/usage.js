// Usage: the tokens a turn used and, where its backend reports it, what
// it cost (UsageInfo._meta["ahpd.cost"], internal/turns UsageInfo), shown
// in the turn's footer; and the session's totals in its header.
//
// A session's totals are added up in the page from the turns it holds:
// the turns of each of the session's chats opened here (a chat keeps its
// tally when another is opened). The header says when that is not all of
// them — a chat not opened yet, or older turns not paged in.

const COST = 'ahpd.cost';
const fmt = new Intl.NumberFormat();

// tallies: chat URI -> {session, input, output, costs: Map currency->amount, complete}
const tallies = new Map();
const MAX_TALLIES = 256;

function costOf(u) {
  const c = u && u._meta && u._meta[COST];
  if (!c || typeof c.amount !== 'number' || !isFinite(c.amount)) return null;
  return { amount: c.amount, currency: typeof c.currency === 'string' && c.currency ? c.currency : 'USD' };
}

function money(amount, currency) {
  if (currency === 'USD') return '$' + amount.toFixed(amount < 1 ? 4 : 2);
  return amount.toFixed(4) + ' ' + currency;
}

function line(input, output, costs) {
  const parts = [`${fmt.format(input)} in`, `${fmt.format(output)} out`];
  for (const [cur, amount] of costs) parts.push(money(amount, cur));
  return parts.join(' · ');
}

// turnUsage is a turn's usage as one line, '' when it reported none.
export function turnUsage(t) {
  const u = t && t.usage;
  if (!u) return '';
  const c = costOf(u);
  return line(u.inputTokens || 0, u.outputTokens || 0, c ? [[c.currency, c.amount]] : []);
}

// noteChat keeps the totals of a chat's turns (session is its session).
export function noteChat(session, chat, st) {
  if (!st || !chat) return;
  let input = 0;
  let output = 0;
  const costs = new Map();
  for (const t of [...(st.turns || []), ...(st.activeTurn ? [st.activeTurn] : [])]) {
    const u = t.usage;
    if (!u) continue;
    input += u.inputTokens || 0;
    output += u.outputTokens || 0;
    const c = costOf(u);
    if (c) costs.set(c.currency, (costs.get(c.currency) || 0) + c.amount);
  }
  tallies.delete(chat);
  tallies.set(chat, { session, input, output, costs, complete: !st.turnsNextCursor });
  if (tallies.size > MAX_TALLIES) tallies.delete(tallies.keys().next().value);
}

// sessionUsage is the session's totals as {text, note}; text is '' when
// no turn of it reported usage.
export function sessionUsage(session, chats) {
  let input = 0;
  let output = 0;
  let counted = 0;
  let complete = true;
  const costs = new Map();
  for (const c of chats) {
    const t = tallies.get(c.resource);
    if (!t || t.session !== session) {
      complete = false;
      continue;
    }
    counted++;
    complete = complete && t.complete;
    input += t.input;
    output += t.output;
    for (const [cur, amount] of t.costs) costs.set(cur, (costs.get(cur) || 0) + amount);
  }
  if (!input && !output && !costs.size) return { text: '', note: '' };
  const note = complete ? '' : `counted from the turns loaded here (${counted} of ${chats.length} chats)`;
  return { text: 'Session usage: ' + line(input, output, costs), note };
}
