# ahpd — see README.md. `make test` is the one test command (CI runs it too).

GO ?= go
AGENTS_STAMP := testdata/agents/node_modules/.package-lock.json

.PHONY: all build run test vet fmt generate agents bench clean

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

test: agents
	@unformatted="$$(gofmt -l cmd internal testdata/fakemodel)"; test -z "$$unformatted" || { echo "gofmt needed: $$unformatted"; exit 1; }
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...

vet:
	$(GO) vet ./...

fmt:
	gofmt -w cmd internal testdata/fakemodel

# Regenerates internal/ahp/actions_gen.go from internal/ahp/actions.table.
generate:
	$(GO) generate ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

clean:
	rm -f ahpd
