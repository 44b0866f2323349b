#!/bin/sh
# Rebuilds static/vendor from the versions pinned in package-lock.json:
# the browser builds of marked (markdown) and DOMPurify (sanitising), with
# their licences. static/vendor is checked in, so `go build` needs no Node;
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
cp node_modules/marked/LICENSE "$out/marked.LICENSE"
cp node_modules/dompurify/LICENSE "$out/dompurify.LICENSE"
