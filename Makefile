# `make test` is the whole suite: it installs what the tests need when missing,
# then checks formatting, vets, runs staticcheck, and runs every test with the
# race detector. -count=1: the e2e tests build and run the binary themselves,
# which Go's test cache cannot see, so a cached pass could hide a change.
# -p 4: four test binaries at a time on 2 cores, because the longest ones
# (test/e2e/alerts, test/alertquality) spend most of their time waiting on real
# Prometheus and Alertmanager, which would otherwise hold a slot idle.
GO ?= go
# -trimpath for every go command make runs, the tests' own `go build`s
# included: without it the build cache keys every package of this module on
# the directory it was checked out in, so each fresh clone (CI's, a second
# worktree) compiled the whole module again for vet, staticcheck, the race
# run and the plain runs, about 140 s of CPU of the suite on 2 cores; with
# it a clone reuses what any earlier checkout of the same files built.
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
# STATICCHECK is where scripts/install-test-deps.sh installs the pinned staticcheck.
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck

# GOCYCLO is gocyclo at a pinned version, run through the module proxy (no
# entry in go.mod: the product does not depend on it).
GOCYCLO ?= $(GO) run github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0

.PHONY: test deps fmt-check vet lint cyclo plain-check build fuzz bench

# alertquality runs without the race detector, beside the rest: its time is
# the simulator and the pipeline playing scenarios (both race-tested in their
# own packages) and the engines it starts, and under -race it took twice the
# CPU (433 s against 204 s) and three times the memory (3.4 GB) on the
# suite's longest path. Its own concurrent code, the pool that plays the
# scenarios side by side, is still run under -race on two scenarios, with
# -short: the engines they would start are the plain run's to test.
#
# PLAIN lists, as package:Test, the tests that run without -race, in a
# third job: long walks of simulated time or data in one goroutine (no go
# statement, server or subprocess in the test), whose packages' concurrent
# code is race-tested by their other tests (pipeline's parallel evaluation
# by TestPassScratchIsFreshMemory and the daemon's tests, reliability's by
# its storms and concurrent clients). Under -race, beside the rest, they took
# 10 to 20 times their plain time (TestPipelineHeapBounded 74 s against 7 s,
# TestSoakHostileFleet 51 s against 4 s), and were most of the race run's
# longest tests: with them here the suite went from about 21 to 14-16
# minutes of CPU, which on 2 cores is its time. plain-check fails when a name is not
# a test of its package or is one of another package too, where -skip would
# drop it from every run.
# SLOW_FIRST are the race run's packages that take longest in wall-clock
# time (waiting on Prometheus, Alertmanager, Chromium and wall-clock
# workloads, 100-250 s each), listed first so that go test starts them
# first: listed in import-path order they started last and one of them
# ran alone at the end while the other jobs were done.
MODULE := $(shell $(GO) list -m)
SLOW_FIRST = $(addprefix $(MODULE)/,test/e2e/alerts bench internal/rules test/e2e test/reliability)
RACE_PKGS = $(SLOW_FIRST) $(filter-out $(SLOW_FIRST),$(shell $(GO) list ./... | grep -v '/test/alertquality$$'))
PLAIN = \
	bench:TestFleetSparseHistory \
	internal/buckets:TestAdvisedEdgesMakeObjectivesExact \
	test/capacitydays:TestCapacityAgainstTruth \
	internal/capacity/online:TestRestoredLearnersPublishWhatNeverStoppedOnesDo \
	internal/console:TestSeriesTimesInExactMode \
	internal/console:TestChartsDrawTheDaemonsEvaluations \
	internal/console:TestChartsReachPastTheFinestTier \
	internal/console:TestRingBeforeItsHistory \
	test/e2e:TestReplayMatchesTruth \
	exporter:TestNewestSeriesHoldTruth \
	internal/history:TestIncreasesIsThePlainMerge \
	internal/history:TestMemoryLimitHolds \
	internal/history:TestRetentionBounded \
	internal/history:TestRunsAreThePieceByPieceSum \
	internal/pipeline:TestBurnAlertLifecycle \
	internal/pipeline:TestBurnCheckWithoutItsSLO \
	internal/pipeline:TestEvaluateModelAtMatchesPastEvaluate \
	internal/pipeline:TestExactIntervalsSurviveRestart \
	internal/pipeline:TestExactModeCountsAbandonedByPolicy \
	internal/pipeline:TestExactPeriodTracingOnAndOff \
	internal/pipeline:TestJointAccuracyAgainstTruth \
	internal/pipeline:TestJointWithinTwiceTheLinearProgram \
	internal/pipeline:TestLateFamiliesHoldTruth \
	internal/pipeline:TestLongWindowJointAgainstTruth \
	internal/pipeline:TestReconfigureRetentionAndTotals \
	internal/pipeline:TestRejectedRequestsCountByPolicy \
	internal/pipeline:TestReusedScratchIsFreshMemory \
	internal/pipeline:TestTruncatedWindowJointAgainstTruth \
	internal/pipeline:TestWindowsMatchTruth \
	internal/pipeline:TestWindowPartsShareEdges \
	internal/pipeline:TestWindowsOfRenderedExpositions \
	test/reliability:TestPipelineHeapBounded \
	test/reliability:TestSoak \
	test/reliability:TestSoakHostileFleet \
	internal/benchreport:TestCapacityOfflineAgainstOnline \
	internal/sim:TestFirstTokenIdentity \
	slo:TestAllocateIsThePlainHeap \
	slo:TestLedgerBoundsHoldTruth \
	internal/traces:TestSealedEqualsRows \
	bench/fleetday:TestFixedLargeFleetMeetsTheGoal \
	bench/fleetday:TestReplicaModelIsCalibratedToTheSimulator \
	bench/fleetday:TestReplicaSignalScalesOnTheLearnedCapacity
empty :=
space := $(empty) $(empty)
PLAIN_PKGS = $(sort $(foreach p,$(PLAIN),./$(firstword $(subst :, ,$(p)))))
PLAIN_TESTS = ^($(subst $(space),|,$(strip $(foreach p,$(PLAIN),$(lastword $(subst :, ,$(p)))))))$$

# LIVE_ENGINE_TESTS run the generated rules live in Prometheus 3 and in
# Thanos's ruler, in wall-clock time: about a minute each of mostly waiting
# on the engines, so they run in a fourth job beside the rest of
# test/alertquality rather than after it, and not niced (a starved engine
# would miss its evaluations).
LIVE_ENGINE_TESTS = ^(TestRulesLiveOnPrometheus3|TestRulesLiveOnThanosRuler)$$

# The jobs run side by side; each one's output is printed whole when
# all are done, the race run's as it goes. alertquality and the plain tests
# run niced: they only compute and replay, while the race run holds the live
# tests (a simulated vLLM serving the daemon, Prometheus and Alertmanager in
# wall-clock time), whose scrapes time out when starved; niced, the two
# still take every cycle the race run leaves, and the whole machine once it
# is done.
NICE ?= nice -n 10
# -vet=off: the vet target has already run every analyzer on every
# package; go test would run its subset again in each of the three jobs.
test: deps fmt-check vet lint cyclo plain-check
	@aqlog="$$(mktemp)"; plainlog="$$(mktemp)"; livelog="$$(mktemp)"; \
	$(GO) test -vet=off -count=1 -timeout 10m -run '$(LIVE_ENGINE_TESTS)' ./test/alertquality >"$$livelog" 2>&1 & live=$$!; \
	( $(NICE) $(GO) test -vet=off -count=1 -timeout 20m -skip '$(LIVE_ENGINE_TESTS)' ./test/alertquality && \
	  $(NICE) $(GO) test -vet=off -race -count=1 -timeout 10m -short -run 'TestAlertQuality$$' ./test/alertquality \
	    -args -scenario '^(restart|clock-step)$$' ) >"$$aqlog" 2>&1 & aq=$$!; \
	$(NICE) $(GO) test -vet=off -count=1 -p 2 -timeout 10m -run '$(PLAIN_TESTS)' $(PLAIN_PKGS) >"$$plainlog" 2>&1 & plain=$$!; \
	$(GO) test -vet=off -race -count=1 -p 4 -timeout 20m -skip '$(PLAIN_TESTS)' $(RACE_PKGS); rest=$$?; \
	wait $$aq; aqrc=$$?; wait $$plain; plainrc=$$?; wait $$live; liverc=$$?; \
	cat "$$plainlog" "$$aqlog" "$$livelog"; rm -f "$$plainlog" "$$aqlog" "$$livelog"; \
	[ $$rest -eq 0 ] && [ $$aqrc -eq 0 ] && [ $$plainrc -eq 0 ] && [ $$liverc -eq 0 ]

# plain-check: every PLAIN entry names a test function of its package and of
# no other package (test names are matched across packages by -run and -skip).
plain-check:
	@for p in $(PLAIN); do \
	  pkg="$${p%%:*}"; name="$${p##*:}"; \
	  found="$$(grep -l "^func $$name(t \*testing.T)" $$(git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go') | xargs -r -n1 dirname | sed 's|^\./||' | sort -u | tr '\n' ' ')"; \
	  if [ "$$found" != "$$pkg " ]; then echo "PLAIN entry $$p: test $$name found in [$$found], want only in $$pkg"; exit 1; fi; \
	done

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
