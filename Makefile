# coderunner — every target is one line of what it does.
GO      ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN     := bin/coderunner
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
LINT    := $(shell $(GO) env GOPATH)/bin/golangci-lint
FUZZTIME ?= 20s

.PHONY: build run test test-cgroup2 test-rootless lint bench bench-peers bench-batch bench-stream batch-example fuzz deps images image test-image test-pod-settings clean

build: ## build bin/coderunner
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/coderunner

run: build ## build, then run examples/hello.py in the sandbox
	./$(BIN) run examples/hello.py

test: ## vet and the whole test suite with the race detector (as root the privileged tests run too)
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 25m ./...

test-cgroup2: ## the cgroup, native, bwrap, docker, interpreter and runner suites, as root and rootless, in a QEMU guest that mounts cgroup v2 only
	scripts/test-cgroup2.sh

test-rootless: ## as root: the suites and the binary as an ordinary user, without and with a delegated cgroup
	scripts/test-rootless.sh

lint: $(LINT) ## golangci-lint with the project's configuration, and the C layout (clang-format)
	$(LINT) run ./...
	clang-format --dry-run --Werror sandbox/native/nsinit/*.c sandbox/native/nsinit/*.h

$(LINT):
	$(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

bench: ## latency, throughput and CPU per run next to bare fork/exec (needs root and gcc)
	scripts/bench.sh

bench-batch: ## solutions judged per second by judge --batch, Python and C++, 10 tests each (needs root)
	scripts/bench-batch.sh

bench-stream: ## what an event stream adds to /v1/run's total, a line and a megabyte, median and p95 over 200 runs (needs root)
	$(GO) test -run '^$$' -bench StreamingCost -benchtime=200x ./httpapi/

batch-example: build ## judge examples/batch (Python and C++ samples of four problems) and print its summary
	./$(BIN) judge --batch examples/batch/solutions.jsonl --test-sets examples/batch/sets > /dev/null

bench-peers: ## coderunner serve next to go-judge (GOJUDGE=/path/to/go-judge, optional) and bare fork/exec over HTTP (needs root and gcc)
	scripts/bench-peers.sh

fuzz: ## every fuzz target in turn, FUZZTIME each (default 20s); scripts/fuzz.sh -list lists them
	scripts/fuzz.sh $(FUZZTIME)

deps: ## install the system packages the tests need (Debian; run as root)
	scripts/install-deps.sh

images: ## start dockerd if needed and build the docker backend's local images (IMAGES="core java ...")
	scripts/start-dockerd.sh
	scripts/build-images.sh $(IMAGES)

image: ## build the service image coderunner/executor:latest (starts dockerd, builds the Debian root if not cached)
	scripts/build-executor-image.sh

test-image: ## build the image, start it with deploy/run-container.sh and drive it from outside
	scripts/test-image.sh

test-pod-settings: image ## the image under Docker with the settings of each Kubernetes variant (deploy/kubernetes)
	scripts/test-pod-settings.sh default
	scripts/test-pod-settings.sh unprivileged

clean:
	rm -rf bin
