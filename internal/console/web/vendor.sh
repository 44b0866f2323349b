#!/bin/sh
# Rebuilds static/vendor from the versions pinned in package-lock.json:
# the browser builds of marked (markdown), DOMPurify (sanitising) and
# xterm.js (terminals, with its stylesheet), with their licences.
# static/vendor is checked in, so `go build` needs no Node;
# run this (make console-vendor, or go generate ./internal/console) after
# changing a pin, and commit what it writes.
set -eu
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
out=../static/vendor
mkdir -p "$out"
# The source maps are not shipped: drop the comment that points at them.
sed '/^\/\/# sourceMappingURL=/d' node_modules/marked/lib/marked.esm.js >"$out/marked.esm.js"
sed '/^\/\/# sourceMappingURL=/d' node_modules/dompurify/dist/purify.es.mjs >"$out/purify.es.js"
# xterm.mjs has no banner of its own: one naming the version is put first,
# so a copy can be checked against the pin.
xterm=$(node -p 'require("./node_modules/@xterm/xterm/package.json").version')
{
	echo "// @xterm/xterm $xterm (MIT, xterm.LICENSE), copied by web/vendor.sh"
	sed '/^\/\/# sourceMappingURL=/d' node_modules/@xterm/xterm/lib/xterm.mjs
} >"$out/xterm.mjs"
cp node_modules/@xterm/xterm/css/xterm.css "$out/xterm.css"
cp node_modules/marked/LICENSE "$out/marked.LICENSE"
cp node_modules/dompurify/LICENSE "$out/dompurify.LICENSE"
cp node_modules/@xterm/xterm/LICENSE "$out/xterm.LICENSE"
