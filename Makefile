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

test: headers ## run every test with the race detector
	$(GO) test $(GOFLAGS_ALL) -race -count=1 -timeout 12m $(PKGS)

test-short: headers ## run the tests without the race detector, skipping the slow ones
	$(GO) test $(GOFLAGS_ALL) -short -count=1 $(PKGS)

lint: headers ## go vet (and staticcheck when installed)
	$(GO) vet $(GOFLAGS_ALL) $(PKGS)
	@if command -v staticcheck >/dev/null; then staticcheck -tags $(TAGS) $(PKGS); else echo "staticcheck not installed; skipped"; fi

bench: build ## Go micro-benchmarks, then the end-to-end ingest and search benchmark
	$(GO) test $(GOFLAGS_ALL) -run '^$$' -bench . -benchmem -count 5 ./chunker ./embedder ./store ./query
	./$(BIN) bench

eval: build ## retrieval quality on LoCoMo (needs ../shared/eval-data/locomo)
	./$(BIN) eval

fuzz: headers ## run each fuzz target for 20s
	@for t in $$(grep -rhoE '^func Fuzz[A-Za-z0-9_]+' --include=*_test.go . | sed 's/func //'); do \
	  pkg=$$(grep -rlE "^func $$t\(" --include=*_test.go . | xargs dirname); \
	  $(GO) test $(GOFLAGS_ALL) -run '^$$' -fuzz "^$$t$$" -fuzztime 20s $$pkg || exit 1; done

clean: ## remove build output (not ./data)
	rm -rf bin .build

.PHONY: help headers build run test test-short lint bench eval fuzz clean
