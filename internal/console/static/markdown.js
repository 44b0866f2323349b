// Markdown for what agents write: parsed by marked (GitHub-flavoured),
// then sanitised by DOMPurify straight into DOM nodes (never assigned as
// HTML to the page). Both are vendored from pinned npm packages
// (../web/package.json, web/vendor.sh).
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

const purifier = DOMPurify(window);
purifier.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    if (!SAFE_URL.test(node.getAttribute('href') || '')) {
      node.removeAttribute('href'); // unwrapped below
      return;
    }
    node.setAttribute('rel', 'noopener noreferrer');
    node.setAttribute('target', '_blank');
  }
  if (node.tagName === 'INPUT' && node.getAttribute('type') !== 'checkbox') {
    node.remove();
  } else if (node.tagName === 'INPUT') {
    node.setAttribute('disabled', '');
  }
});

const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  ALLOWED_URI_REGEXP: SAFE_URL,
  FORBID_TAGS: ['style', 'form', 'button', 'textarea', 'select', 'img', 'svg', 'math', 'iframe', 'object', 'embed'],
  FORBID_ATTR: ['style', 'id', 'name'],
};

// renderMarkdown returns a div of class "md" holding src rendered.
export function renderMarkdown(src) {
  const root = document.createElement('div');
  root.className = 'md';
  const html = parser.parse(String(src ?? '')).trim();
  const nodes = purifier.sanitize(html, PURIFY);
  // A link whose target was not safe keeps only its text.
  for (const a of nodes.querySelectorAll('a:not([href])')) a.replaceWith(...a.childNodes);
  root.append(nodes);
  return root;
}
