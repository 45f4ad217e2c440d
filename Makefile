# memindex — `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
TAGS := sqlite_fts5
INCLUDE := $(CURDIR)/.build/include
export CGO_ENABLED := 1
# The vector scan uses Go's experimental SIMD package (store/dot_simd.go);
# without it the scalar loop is used, same results within float rounding.
export GOEXPERIMENT := simd
# sqlite-vec's cgo package includes <sqlite3.h>; point it at the header of the
# SQLite that mattn/go-sqlite3 compiles in, so no system libsqlite3-dev is needed.
export CGO_CFLAGS := -I$(INCLUDE) -O2
GOFLAGS_ALL := -tags=$(TAGS)
BIN := bin/memindex
PKGS := ./...

.DEFAULT_GOAL := help

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-10s %s\n",$$1,$$2}'

$(INCLUDE)/sqlite3.h: go.mod
	@mkdir -p $(INCLUDE)
	@$(GO) mod download github.com/mattn/go-sqlite3
	@d=$$($(GO) list -m -f '{{.Dir}}' github.com/mattn/go-sqlite3) && \
	  cp $$d/sqlite3-binding.h $(INCLUDE)/sqlite3-binding.h && \
	  cp $$d/sqlite3-binding.h $(INCLUDE)/sqlite3.h && \
	  cp $$d/sqlite3ext.h $(INCLUDE)/sqlite3ext.h && chmod u+w $(INCLUDE)/*.h

headers: $(INCLUDE)/sqlite3.h ## copy the SQLite headers cgo needs into .build/

build: headers ## build bin/memindex
	$(GO) build $(GOFLAGS_ALL) -o $(BIN) ./cmd/memindex

run: build ## run the worker on the embedded default (NATS on 127.0.0.1:4222, data in ./data)
	./$(BIN) serve --data ./data

# The crash and fault tests (cmd/memindex/crash_test.go, fault_test.go) build
# their own child binary with the failpoints tag; the tag is never in TAGS,
# so `make build` has no failpoints (internal/failpoint).
test: headers ## run every test with the race detector, then the failpoint package with its tag
	$(GO) test $(GOFLAGS_ALL) -race -count=1 -timeout 20m $(PKGS)
	$(GO) test -tags=$(TAGS),failpoints -race -count=1 ./internal/failpoint

test-short: headers ## run the tests without the race detector, skipping the slow ones
	$(GO) test $(GOFLAGS_ALL) -short -count=1 $(PKGS)

lint: headers ## go vet (and staticcheck when installed)
	$(GO) vet $(GOFLAGS_ALL) $(PKGS)
	@if command -v staticcheck >/dev/null; then staticcheck -tags $(TAGS) $(PKGS); else echo "staticcheck not installed; skipped"; fi

# Corpus sizes of the bench's vector-leg comparison; add 1000000 for the 1M run
# (builds ~5 GB of cached files under bench-out/cache once, then reuses them).
BENCH_SIZES ?= 10000,100000
BENCH_OUT ?= bench-out

bench: build ## Go micro-benchmarks, then `memindex bench` (ingest, per stage, search, concurrency, vector leg four ways; BENCH_SIZES=10000,100000,1000000) into bench-out/
	$(GO) test $(GOFLAGS_ALL) -run '^$$' -bench . -benchmem -count 5 ./chunker ./embedder ./store ./query
	./$(BIN) bench --sizes $(BENCH_SIZES) --out $(BENCH_OUT)

eval: build ## retrieval quality as the agent pays, beside plain BM25, on both halves of LoCoMo (needs ../shared/eval-data/locomo) and the generated corpora
	./$(BIN) eval --split --mode hybrid,keyword --data ../shared/eval-data/locomo,synthetic-en,synthetic-zh

# FUZZTIME is how long each fuzz target runs under `make fuzz` (CI: seconds);
# `make test-long` runs each for LONG_FUZZTIME.
FUZZTIME ?= 10s
LONG_FUZZTIME ?= 60s

fuzz: headers ## run every Fuzz target of every package for FUZZTIME (10s) each
	@grep -rlE '^func Fuzz' --include=*_test.go . | sort | while read -r f; do \
	  for t in $$(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$$f" | sed 's/func //'); do \
	    echo "== $$t ($$(dirname "$$f"), $(FUZZTIME))"; \
	    $(GO) test $(GOFLAGS_ALL) -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) "$$(dirname "$$f")" || exit 1; \
	  done; done

test-long: headers ## every test with MEMINDEX_LONG=1 (bigger corpora), then each fuzz target for LONG_FUZZTIME (60s)
	MEMINDEX_LONG=1 $(GO) test $(GOFLAGS_ALL) -race -count=1 -timeout 60m $(PKGS)
	$(MAKE) fuzz FUZZTIME=$(LONG_FUZZTIME)

clean: ## remove build output (not ./data)
	rm -rf bin .build

.PHONY: help headers build run test test-short test-long lint bench eval fuzz clean
