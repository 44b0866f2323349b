// Markdown for what agents write: parsed by marked (GitHub-flavoured),
// then sanitised by DOMPurify straight into DOM nodes (never assigned as
// HTML to the page). Both are vendored from pinned npm packages
// (../web/package.json; ../web/vendor.sh copies them).
//
// An agent's text is untrusted, so on top of DOMPurify's defaults:
//   - raw HTML in the source shows as the text it is (marked's html tokens
//     are escaped), so nothing an agent writes becomes markup of its choosing;
//   - links are kept only for http(s) and mailto targets, and open in a new
//     tab with no opener and no referrer;
//   - images are not fetched: one shows as a link to its source (the page's
//     content security policy would block a foreign one anyway);
//   - forms, inputs other than task-list boxes, styles, frames, SVG and
//     MathML are dropped.

import { Marked } from './vendor/marked.esm.js';
import DOMPurify from './vendor/purify.es.js';

const SAFE_URL = /^(?:https?:|mailto:)/i;

const escapeHTML = (s) =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

const parser = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    html({ text }) {
      return escapeHTML(text);
    },
    image({ href, text }) {
      const label = escapeHTML(text || href || 'image');
      return SAFE_URL.test(href || '') ? `<a href="${escapeHTML(href)}">${label}</a>` : label;
    },
  },
});

const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  ALLOWED_URI_REGEXP: SAFE_URL,
  FORBID_TAGS: ['style', 'form', 'button', 'textarea', 'select', 'img', 'svg', 'math', 'iframe', 'object', 'embed'],
  FORBID_ATTR: ['style', 'id', 'name'],
};

// A live turn is drawn again every animation frame while it streams; its
// parts that did not change since keep their nodes (by key) instead of
// being parsed again. Bounded: the oldest entry goes past MEMO_MAX.
const MEMO_MAX = 64;
const memo = new Map();

// renderMarkdown returns a div of class "md" holding src rendered. With a
// key (a live part's), an unchanged src returns the node drawn last time.
export function renderMarkdown(src, key) {
  src = String(src ?? '');
  const kept = key === undefined ? undefined : memo.get(key);
  if (kept && kept.src === src) return kept.node;
  const root = document.createElement('div');
  root.className = 'md';
  const nodes = DOMPurify.sanitize(parser.parse(src).trim(), PURIFY);
  for (const a of nodes.querySelectorAll('a')) {
    if (a.hasAttribute('href')) {
      a.rel = 'noopener noreferrer';
      a.target = '_blank';
    } else {
      // Its target was not safe (DOMPurify took it): only its text stays.
      a.replaceWith(...a.childNodes);
    }
  }
  // Inputs are only a task list's boxes, shown, never used.
  for (const i of nodes.querySelectorAll('input')) {
    if (i.type === 'checkbox') i.disabled = true;
    else i.remove();
  }
  root.append(nodes);
  if (key !== undefined) {
    memo.delete(key);
    memo.set(key, { src, node: root });
    if (memo.size > MEMO_MAX) memo.delete(memo.keys().next().value);
  }
  return root;
}
