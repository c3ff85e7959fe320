# gompix: the two commands a fresh machine needs are `make demo` and `make test`.
GO      ?= go
BIN     := bin
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build demo test test-short vet race clean device-build rig-up rig-down rig-test

# deps installs the C library gompix links (UCX) when its headers are
# missing, and pkg-config, through which cgo finds UCX's flags.
deps:
	@if [ ! -f /usr/include/ucp/api/ucp.h ] || ! command -v pkg-config >/dev/null; then \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libucx-dev pkg-config; \
	fi

build: deps
	$(GO) build -o $(BIN)/ ./cmd/... ./examples/...

# demo: build everything and run the ring example on 4 ranks (on fewer
# CPUs too: --oversubscribe).
demo: build
	$(BIN)/gompirun --oversubscribe -n 4 $(BIN)/hello
	$(BIN)/gompirun --oversubscribe -n 4 $(BIN)/ring -laps 100
	$(BIN)/gompirun --oversubscribe -n 4 $(BIN)/datatypes

vet:
	@test -z "$$(gofmt -l .)" || (echo "gofmt needed:"; gofmt -l .; exit 1)
	$(GO) vet ./...

# test: formatting, vet, the whole suite under the race detector (multi-process
# tests over real UCX included). gotestsum (tools/go.mod) prints each test as
# it ends, so a long run says where it is; a failure prints its whole output.
GOTESTSUM := $(GO) tool -modfile=tools/go.mod gotestsum
test: deps vet
	$(GOTESTSUM) --format testname --format-hide-empty-pkg -- -race -count=1 -timeout 20m ./...

# The multi-node test rig (docs/guide/multi-node-rig.md): RIG_NODES nodes as
# namespaces on a private bridge. rig-test runs the rig's tests, Slurm's
# included (it installs Slurm and munge when missing).
RIG_NODES ?= 2
rig-up:
	$(SUDO) scripts/rig/rig.sh up $(RIG_NODES)
rig-down:
	$(SUDO) scripts/rig/slurm.sh down
	$(SUDO) scripts/rig/rig.sh down
rig-test:
	GOMPIX_RIG_SLURM=1 $(GO) test -race -count=1 -v ./internal/rigtest/

clean:
	rm -rf $(BIN) .device
