# `make test` is the whole suite: it installs what the tests need when missing,
# then checks formatting, vets, runs staticcheck, and runs every test with the
# race detector. -count=1: the e2e tests build and run the binary themselves,
# which Go's test cache cannot see, so a cached pass could hide a change.
# -p 4: four test binaries at a time on 2 cores, because the longest ones
# (e2e/alerts, alertquality) spend most of their time waiting on real
# Prometheus and Alertmanager, which would otherwise hold a slot idle.
GO ?= go
# STATICCHECK is where scripts/install-test-deps.sh installs the pinned staticcheck.
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck

# GOCYCLO is gocyclo at a pinned version, run through the module proxy (no
# entry in go.mod: the product does not depend on it).
GOCYCLO ?= $(GO) run github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0

.PHONY: test deps fmt-check vet lint cyclo build fuzz bench

# alertquality runs without the race detector, beside the rest: its time is
# the simulator and the pipeline playing scenarios (both race-tested in their
# own packages) and the engines it starts, and under -race it took twice the
# CPU (433 s against 204 s) and three times the memory (3.4 GB) on the
# suite's longest path. Its own concurrent code, the pool that plays the
# scenarios side by side, is still run under -race on two scenarios.
# PLAIN_TESTS run without -race too, beside alertquality: long walks of
# simulated days in one goroutine each, whose packages' concurrent code is
# race-tested by their other tests. bench's TestFleetSparseHistory (31 days
# of one target's samples twice: 8 s plain against 122 s under -race),
# pipeline's four truth tests over whole scenarios (15 s against 89 s) and
# capacity/days' truth test (3 s against about 100 s). The suite is
# CPU-bound on 2 cores, so this is its time.
RACE_PKGS = $(shell $(GO) list ./... | grep -v '/alertquality$$')
PLAIN_PKGS = ./bench ./pipeline ./capacity/days
PLAIN_TESTS = ^(TestFleetSparseHistory|TestExactPeriodTracingOnAndOff|TestJointWithinTwiceTheLinearProgram|TestJointAccuracyAgainstTruth|TestLongWindowJointAgainstTruth|TestCapacityAgainstTruth)$$

test: deps fmt-check vet lint cyclo
	@log="$$(mktemp)"; \
	( $(GO) test -count=1 -timeout 5m -run '$(PLAIN_TESTS)' $(PLAIN_PKGS) && \
	  $(GO) test -count=1 -timeout 20m ./alertquality && \
	  $(GO) test -race -count=1 -timeout 10m -run 'TestAlertQuality$$' ./alertquality \
	    -args -scenario '^(restart|clock-step)$$' ) >"$$log" 2>&1 & aq=$$!; \
	$(GO) test -race -count=1 -p 4 -timeout 20m -skip '$(PLAIN_TESTS)' $(RACE_PKGS); rest=$$?; \
	wait $$aq; aqrc=$$?; cat "$$log"; rm -f "$$log"; \
	[ $$rest -eq 0 ] && [ $$aqrc -eq 0 ]

deps:
	./scripts/install-test-deps.sh

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

lint:
	$(STATICCHECK) ./...

# cyclo lists every production function (tests aside) with a cyclomatic
# complexity above 20, and fails if there is one: such a function is usually
# two (parse and validate, decode per family).
cyclo:
	$(GOCYCLO) -over 20 -ignore '_test|/testdata/' .

build:
	CGO_ENABLED=0 $(GO) build -o vllm-slo-exporter ./cmd/vllm-slo-exporter

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
