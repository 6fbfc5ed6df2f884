# Sluice. `make demo` and `make test` are the README's two quickstart commands;
# each installs what it needs through tools/setup first (apt, needs root).
SWIFT ?= swift
FUZZ_SECONDS ?= 60

.PHONY: all setup build release test unit integration demo bench bench-compare bench-proxy fuzz check-layers clean

all: build

setup:
	@tools/setup

build: setup
	$(SWIFT) build

release: setup
	$(SWIFT) build -c release

check-layers:
	@tools/check-layers

# The whole suite: unit tests of every layer and the namespace integration
# tests (those need root; without it they are reported as skipped). The
# cryptography's known answers are also checked in a release build, which the
# debug-built unit tests cannot speak for (docs/tls.md, "Release builds").
# Unit tests run in parallel; the namespace integration tests one at a time,
# so that throughput and loss checks (iperf3, the big transfers) do not share
# the machine's two cores with each other.
test: setup check-layers
	tools/fuzz/run --typecheck
	$(SWIFT) build --build-tests
	$(SWIFT) build -c release --product sluice
	$(SWIFT) build -c release --product sluice-bench
	.build/release/sluice-bench crypto --check
	$(SWIFT) test --skip-build --skip IntegrationTests
	SLUICE_BINARY=$(CURDIR)/.build/release/sluice $(SWIFT) test --skip-build --filter IntegrationTests --no-parallel

demo: setup
	$(SWIFT) build -c release --product sluice
	tools/demo

bench: setup
	tools/bench wire
	tools/bench stack
	tools/bench rules

# The kernel's veth path, pasta, slirp4netns and sluice exec side by side
# (../shared/spec/bench-anchors.md): as root, about 20 minutes at RUNS=3
# SECONDS_PER_RUN=10; see the script's header for the knobs.
bench-compare: setup
	tools/bench-compare

# sluice proxy against danted (SOCKS5) and tinyproxy (HTTP), with the client
# going straight to nginx as the limit: as root, about 6 minutes at RUNS=5.
bench-proxy: setup
	tools/bench-proxy

# Bounded libFuzzer run over every parser harness: FUZZ_SECONDS each.
fuzz: setup
	tools/fuzz/run $(FUZZ_SECONDS)

clean:
	rm -rf .build fuzz-out
