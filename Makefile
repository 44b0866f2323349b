# ahpd — see README.md. Two test commands:
#   make test   the quick run: gofmt, vet, and the unit and in-process
#               integration tests (script agent, fake model server) under
#               the race detector; a few minutes, nothing to install.
#   make check  everything, what CI runs (.ci/run): installs the agent CLIs
#               and Chromium, then runs the whole suite with AHPD_CHECK=1 (the
#               tests that drive real agent CLIs or Chromium, soak, load and
#               kill -9 loops, the network-namespace re-run: they call
#               testutil.RequireCheck and skip in make test; the upgrade test
#               from the newest release tag, TestUpgradeKeepsEverything), the tests the
#               race detector is too slow for without it, and every benchmark
#               once.

GO ?= go
# -trimpath: builds name files by module path, not by where the checkout
# lies, so a fresh clone reuses what the build cache already compiled for
# another (and the binaries are reproducible).
export GOFLAGS := -trimpath $(GOFLAGS)
AGENTS_STAMP := testdata/agents/node_modules/.package-lock.json

.PHONY: all build run test check fmt-check vet fmt generate agents chromium console-vendor bench clean

all: build

build:
	$(GO) build -o ahpd ./cmd/ahpd

run:
	$(GO) run ./cmd/ahpd serve

# The agent CLIs the backend tests drive, pinned in testdata/agents/package-lock.json.
# Tests that need one skip with an install hint when it is absent.
agents: $(AGENTS_STAMP)

$(AGENTS_STAMP): testdata/agents/package.json testdata/agents/package-lock.json
	npm ci --prefix testdata/agents --no-audit --no-fund

# Debian's Chromium, for the web console's browser tests (internal/daemon/console_test.go,
# make check): installed with apt only when it is missing and apt can run (root, or sudo
# without a password). Without it those tests skip with the install hint.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	  elif command -v apt-get >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	  else echo "chromium is missing and apt cannot install it here: the browser tests will skip (apt-get install -y chromium)"; fi; }

# The tests that skip under the race detector (too slow with it); make check
# runs them without it.
NORACE_TESTS := TestResourceSizes|TestTerminalPrintingForeverStaysBounded

# The quick run: no npm, no Chromium, no benchmarks; AHPD_CHECK is cleared
# so the check-only tests skip even if the shell exports it.
# -tags lockcheck: every ranked mutex checks the order it is taken in
# (internal/lockorder), and an inversion panics naming both.
test: fmt-check vet
	AHPD_CHECK= $(GO) test -race -tags lockcheck -count=1 -timeout 10m ./...

# Everything (CI runs this).
check: agents chromium fmt-check vet
	AHPD_CHECK=1 $(GO) test -race -tags lockcheck -count=1 -timeout 60m ./...
	AHPD_CHECK=1 $(GO) test -count=1 -timeout 15m -run '^($(NORACE_TESTS))$$' ./internal/daemon
	@# Every benchmark once, briefly, so none rots (the figures: make bench);
	@# the chats' memory runs 20,000 turns here, 100,000 in make bench.
	AHPD_CHECK=1 AHPD_BENCH_CHAT_TURNS=20000 $(GO) test -run '^$$' -bench . -benchtime=1x -timeout 15m ./...

fmt-check:
	@unformatted="$$(gofmt -l cmd internal testdata/fakemodel)"; test -z "$$unformatted" || { echo "gofmt needed: $$unformatted"; exit 1; }

vet:
	$(GO) vet ./...

fmt:
	gofmt -w cmd internal testdata/fakemodel

# Rebuilds the console's vendored marked and DOMPurify from their npm pins
# (internal/console/web/package-lock.json); the output is checked in.
console-vendor:
	sh internal/console/web/vendor.sh

# Regenerates internal/ahp/actions_gen.go from internal/ahp/actions.table,
# and the console's vendored modules (npm).
generate:
	$(GO) generate ./...

# The figures of docs/PERFORMANCE.md, each against a baseline measured in
# the same run, as one table (internal/perf/benchtable).
# TurnVsDurableRaw and LoadVsDurableRaw measure ahpd against the durable raw
# server (internal/perf/durableraw) and the bare server, each in its own process.
PERF_BENCH := Fanout|IdleSessionMemory|TurnVsDurableRaw|ColdStart|ListSessionsPage|Persist200Parts|FirstSubscribe|LoadVsDurableRaw|ChatMemory|Search10kTurns
# The load figure's chats (four clients each); each client is a socket on both
# ends, and the three servers' clients are all open at once.
BENCH_LOAD_CHATS ?= 1000
# The sessions of the idle-memory figure.
BENCH_SESSIONS ?= 10000

# -p 1: one package's benchmarks at a time (go test runs as many test
# binaries at once as there are CPUs, and the store's figures ran beside the
# daemon's).
bench:
	ulimit -n 65536 2>/dev/null; AHPD_BENCH_LOAD_CHATS=$(BENCH_LOAD_CHATS) AHPD_BENCH_SESSIONS=$(BENCH_SESSIONS) $(GO) test -p 1 -run '^$$' -bench '$(PERF_BENCH)' -benchtime=1x -timeout 30m ./internal/daemon ./internal/store | $(GO) run ./internal/perf/benchtable

clean:
	rm -f ahpd
