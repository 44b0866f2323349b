// A small markdown renderer that builds DOM nodes and never parses HTML.
//
// Why not a full renderer plus a sanitiser: an agent's text is untrusted,
// and the safest HTML sanitiser is none at all. Every character of the
// source ends up in a text node; only the constructs below make elements,
// and a link is made only for http(s) and mailto targets. Raw HTML in the
// source shows as the text it is.
//
// Blocks: fenced code (```lang), headings (#..######), block quotes (>),
// lists (-, *, + and 1.), horizontal rules, tables (| a | b |), paragraphs.
// Inline: `code`, **strong**, *em* / _em_, ~~strike~~, [text](url), <url>.

const SAFE_URL = /^(https?:\/\/|mailto:)/i;

export function renderMarkdown(src) {
  const root = document.createElement('div');
  root.className = 'md';
  const lines = String(src ?? '').replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) {
      const p = el('p');
      inline(p, para.join('\n'));
      root.append(p);
      para = [];
    }
  };
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if ((m = /^\s*(```+|~~~+)\s*([\w+-]*)/.exec(line))) {
      flush();
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i++]);
      i++; // the closing fence (or the end)
      const pre = el('pre');
      const code = el('code');
      if (m[2]) code.dataset.lang = m[2];
      code.textContent = body.join('\n');
      pre.append(code);
      root.append(pre);
      continue;
    }
    if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
      flush();
      const h = el('h' + Math.min(6, m[1].length + 2));
      inline(h, m[2].replace(/\s+#+\s*$/, ''));
      root.append(h);
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      root.append(el('hr'));
      i++;
      continue;
    }
    if (/^\s*>/.test(line)) {
      flush();
      const body = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) body.push(lines[i++].replace(/^\s*>\s?/, ''));
      const q = el('blockquote');
      q.append(...renderMarkdown(body.join('\n')).childNodes);
      root.append(q);
      continue;
    }
    if ((m = /^(\s*)([-*+]|\d{1,9}[.)])\s+/.exec(line))) {
      flush();
      const ordered = /\d/.test(m[2]);
      const list = el(ordered ? 'ol' : 'ul');
      if (ordered && parseInt(m[2], 10) !== 1) list.start = parseInt(m[2], 10);
      const item = ordered ? /^\s*\d{1,9}[.)]\s+(.*)$/ : /^\s*[-*+]\s+(.*)$/;
      while (i < lines.length) {
        const lm = item.exec(lines[i]);
        if (!lm) break;
        const text = [lm[1]];
        i++;
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !item.test(lines[i])) text.push(lines[i++].trim());
        const li = el('li');
        inline(li, text.join('\n'));
        list.append(li);
      }
      root.append(list);
      continue;
    }
    if (/^\s*\|.*\|\s*$/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}/.test(lines[i + 1])) {
      flush();
      const table = el('table');
      const row = (text, cell) => {
        const tr = el('tr');
        for (const c of text.trim().replace(/^\||\|$/g, '').split('|')) {
          const td = el(cell);
          inline(td, c.trim());
          tr.append(td);
        }
        return tr;
      };
      const thead = el('thead');
      thead.append(row(line, 'th'));
      table.append(thead);
      i += 2;
      const tbody = el('tbody');
      while (i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i])) tbody.append(row(lines[i++], 'td'));
      table.append(tbody);
      root.append(table);
      continue;
    }
    if (line.trim() === '') {
      flush();
      i++;
      continue;
    }
    para.push(line);
    i++;
  }
  flush();
  return root;
}

function el(tag) {
  return document.createElement(tag);
}

// inline appends the inline content of text to parent.
function inline(parent, text) {
  const re = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([\s\S]+?)\*\*|__([\s\S]+?)__|~~([\s\S]+?)~~|\*([^\s*][\s\S]*?)\*|\b_([^\s_][\s\S]*?)_\b|\[([^\]\n]+)\]\(\s*<?([^()\s<>]+)>?\s*\)|<((?:https?:\/\/|mailto:)[^\s<>]+)>|\n/g;
  let last = 0;
  let m;
  while ((m = re.exec(text))) {
    if (m.index > last) parent.append(document.createTextNode(text.slice(last, m.index)));
    last = re.lastIndex;
    if (m[1]) {
      const c = el('code');
      c.textContent = m[2];
      parent.append(c);
    } else if (m[3] !== undefined || m[4] !== undefined) {
      const s = el('strong');
      inline(s, m[3] ?? m[4]);
      parent.append(s);
    } else if (m[5] !== undefined) {
      const s = el('del');
      inline(s, m[5]);
      parent.append(s);
    } else if (m[6] !== undefined || m[7] !== undefined) {
      const s = el('em');
      inline(s, m[6] ?? m[7]);
      parent.append(s);
    } else if (m[8] !== undefined) {
      parent.append(link(m[8], m[9], m[0]));
    } else if (m[10] !== undefined) {
      parent.append(link(m[10], m[10], m[0]));
    } else {
      parent.append(el('br'));
    }
  }
  if (last < text.length) parent.append(document.createTextNode(text.slice(last)));
}

// link makes an anchor for a safe target, or leaves the source as text.
function link(label, href, source) {
  if (!SAFE_URL.test(href)) return document.createTextNode(source);
  const a = el('a');
  a.href = href;
  a.rel = 'noopener noreferrer';
  a.target = '_blank';
  inline(a, label);
  return a;
}
