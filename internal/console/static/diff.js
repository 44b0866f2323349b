// A line diff for the changeset view: the longest common subsequence of
// the two texts' lines, bounded so a huge file cannot stall the page.

const MAX_CELLS = 4_000_000;

// lineDiff returns [{op: ' ' | '-' | '+', line}] turning before into
// after, or null when the texts are too large to compare here.
export function lineDiff(before, after) {
  const a = before === '' ? [] : before.replace(/\n$/, '').split('\n');
  const b = after === '' ? [] : after.replace(/\n$/, '').split('\n');
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length, endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) endA--, endB--;
  const n = endA - start, m = endB - start;
  if (n * m > MAX_CELLS) return null;
  // lcs[i][j]: the LCS length of a[start+i..endA) and b[start+j..endB).
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = a[start + i] === b[start + j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = a.slice(0, start).map((line) => ({ op: ' ', line }));
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[start + i] === b[start + j]) out.push({ op: ' ', line: a[start + i] }), i++, j++;
    else if (i < n && (j === m || lcs[i + 1][j] >= lcs[i][j + 1])) out.push({ op: '-', line: a[start + i] }), i++;
    else out.push({ op: '+', line: b[start + j] }), j++;
  }
  return out.concat(a.slice(endA).map((line) => ({ op: ' ', line })));
}

// hunks keeps the changed lines with `context` lines around them, and
// marks the gaps.
export function hunks(diff, context = 3) {
  const keep = new Array(diff.length).fill(false);
  diff.forEach((d, i) => {
    if (d.op === ' ') return;
    for (let k = Math.max(0, i - context); k <= Math.min(diff.length - 1, i + context); k++) keep[k] = true;
  });
  const out = [];
  let gap = false;
  diff.forEach((d, i) => {
    if (keep[i]) {
      if (gap) out.push({ op: '@', line: '…' });
      gap = false;
      out.push(d);
    } else gap = true;
  });
  return out;
}
