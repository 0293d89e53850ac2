GO ?= go
BIN := bin

.PHONY: all build test run proto lint vet fmt bench sim clean samples

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) test -count=1 -timeout 30m -race ./lsm/... ./smm/... ./acm/... ./vodnode/... ./cdp/...

run: build
	$(BIN)/vodcluster up --play sample-001

proto:
	protoc -I proto --go_out=paths=source_relative:proto --go-grpc_out=paths=source_relative:proto proto/vodcluster/v1/vodcluster.proto

STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) run $(STATICCHECK) ./...

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./lsm/... ./smm/... ./vodnode/deliver/... ./cdp/...

sim: build
	$(BIN)/vodcluster sim

samples:
	cdp/samples/make-samples.sh

clean:
	rm -rf $(BIN)
