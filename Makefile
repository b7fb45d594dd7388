# idemcheck — the two commands a newcomer runs: `make demo` and `make test`.
GO        ?= go
BIN       := bin/idemcheck
OUT       := out
PKGS      := ./...

.PHONY: all build demo test bench lint clean dist-check fuzz soak flake

all: build

build:
	$(GO) build -o $(BIN) ./cmd/idemcheck

# The main job on the embedded default: reference server (memory store),
# conformance run, short load and short chaos; reports under $(OUT)/.
demo: build
	bash scripts/demo.sh $(BIN) $(OUT)

# The test command CI runs (.ci/run). Real PostgreSQL, Redis and MariaDB are
# started by internal/testenv; everything runs under the race detector.
# -p 4: the long packages (scenarios, cmd/idemcheck, examples/variants) mostly
# wait on slow variants and TTLs, so four at a time fit two cores; their
# verdicts are load-proof (the flake guard runs at 3x oversubscription).
test: lint
	$(GO) test -race -count=1 -p 4 -timeout 30m $(PKGS)

# Every fuzz target for FUZZTIME each (the seeds already run in `make test`).
FUZZTIME ?= 2m
fuzz:
	GO=$(GO) bash scripts/fuzz.sh $(FUZZTIME)

# Memory soak: serve under load, proxy under chaos, SOAK_TIME each (default
# 10m); fails when RSS keeps growing after warm-up. Figures in docs/reliability.md.
SOAK_TIME ?= 10m
soak: build
	SOAK_TIME=$(SOAK_TIME) bash scripts/soak.sh $(BIN) $(OUT)/soak

# Load-proof verdicts: FLAKE_RUNS (20) catalog runs against the reference,
# its no-inflight-lock defect and the lock-lapses variant beside CPU burners
# and a race build; fails on any false pass, fail or warn (scripts/flake.sh).
flake: build
	bash scripts/flake.sh $(BIN) $(OUT)/flake

bench: build
	bash scripts/bench.sh $(OUT)/bench

# Distribution files: goreleaser check and actionlint (scripts/check-dist.sh).
# Not part of test: it downloads and builds both tools (minutes when cold).
dist-check:
	bash scripts/check-dist.sh

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	@if grep -rnE '\b(FIt|FDescribe|FContext|FWhen|FEntry|FDescribeTable)\(' --include='*.go' . ; then \
	  echo "focused Ginkgo specs are banned (a passing run exits 197)"; exit 1; fi
	$(GO) vet $(PKGS)

clean:
	rm -rf bin $(OUT)
