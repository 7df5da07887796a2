# `make test` is the whole suite: it installs what the tests need when missing,
# then checks formatting, vets, runs staticcheck, and runs every test with the
# race detector. -count=1: the e2e tests build and run the binary themselves,
# which Go's test cache cannot see, so a cached pass could hide a change.
GO ?= go
# STATICCHECK is where scripts/install-test-deps.sh installs the pinned staticcheck.
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck

.PHONY: test deps fmt-check vet lint build fuzz bench

test: deps fmt-check vet lint
	$(GO) test -race -count=1 -timeout 20m ./...

deps:
	./scripts/install-test-deps.sh

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

lint:
	$(STATICCHECK) ./...

build:
	CGO_ENABLED=0 $(GO) build -o vllm-slo-exporter ./cmd/vllm-slo-exporter

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
