# gpuplan build entry points. `make demo` and `make test` are the two commands of the README.
BUILD ?= build
# The sanitized build (clang, AddressSanitizer + UndefinedBehaviorSanitizer): the tests and the fuzz targets.
SAN_BUILD ?= build-fuzz
WEB_BUILD ?= build-web
PYTHON_BUILD ?= build-python
JOBS ?= $(shell nproc)
# Debian's interpreter: it has PyTorch (the validation) and pytest (the Python module's tests).
PY ?= /usr/bin/python3
# The interpreter `make python-install` installs the gpuplan module for.
PYTHON ?= python3

.PHONY: deps build demo test unit-test asan-test validation bench fuzz-smoke fuzz-long golden python-install pip-check \
        function-size clean web web-test

deps:
	bash scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE=$(PY)
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/gpuplan model llama-3.1-70b
	./$(BUILD)/gpuplan memory --model llama-3.1-70b --gpu h100-sxm-80gb --gpus 64 --tp 8 --pp 4 \
	  --seq-len 8192 --micro-batch 1 --global-batch 512 --precision bf16 --zero 1 --sequence-parallel \
	  --recompute selective --attention flash
	./$(BUILD)/gpuplan plan --model llama-3.1-70b --system dgx-h100 --nodes 8 --seq-len 8192 --global-batch 512 --top 1

unit-test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Every test again under AddressSanitizer + UndefinedBehaviorSanitizer, in the build fuzz-smoke uses.
asan-test: deps
	bash scripts/configure-sanitized.sh $(CURDIR)/$(SAN_BUILD)
	cmake --build $(SAN_BUILD) -j $(JOBS) --target gpuplan gpuplan_tests
	cd $(SAN_BUILD) && ctest --output-on-failure -j $(JOBS)

validation: build
	$(PY) validation/run_torch_validation.py --gpuplan ./$(BUILD)/gpuplan --out validation/torch_report.md
	bash validation/run_time_validation.sh $(BUILD)
	$(PY) validation/run_megatron_memory_validation.py --gpuplan ./$(BUILD)/gpuplan \
	  --check validation/megatron_memory_report.md

fuzz-smoke: deps
	FUZZ_BUILD=$(CURDIR)/$(SAN_BUILD) bash scripts/fuzz-smoke.sh

# A longer campaign: MINUTES per target, a random seed, new coverage merged into fuzz/corpus/ (fuzz/README.md).
MINUTES ?= 10
fuzz-long: deps
	FUZZ_SECONDS=$$(( $(MINUTES) * 60 )) FUZZ_SEED=0 FUZZ_MERGE=1 bash scripts/fuzz-smoke.sh

# Every function of the library, the host layer, the program and the Python binding is at most 80 lines.
function-size: build
	bash scripts/check-function-size.sh $(BUILD)

# `pip install .` into a fresh virtual environment, without any package index.
pip-check: deps
	bash scripts/check-pip-install.sh $(PYTHON)

test: unit-test asan-test validation fuzz-smoke function-size pip-check web-test

golden: build
	$(PY) tests/golden/golden.py --gpuplan ./$(BUILD)/gpuplan --update

# The page (web/dist/): the core compiled to WebAssembly with Debian's emscripten, the JavaScript bundled with
# esbuild from npm (web/package-lock.json). Debian's em++ runs its tools with the machine's node, which finds
# Debian's acorn only through NODE_PATH.
EMENV = NODE_PATH=/usr/share/nodejs
web: deps
	bash scripts/install-web-deps.sh
	$(EMENV) emcmake cmake -S web -B $(WEB_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release
	$(EMENV) cmake --build $(WEB_BUILD) -j $(JOBS)
	node web/build.mjs $(WEB_BUILD)

# The page in headless Chromium against the command line's JSON (web/tests/).
web-test: web build
	GPUPLAN=$(CURDIR)/$(BUILD)/gpuplan GPUPLAN_SCREENSHOTS=$(CURDIR)/$(WEB_BUILD)/screenshots \
	  node --test web/tests/page.test.mjs

# Builds the Python module for $(PYTHON) and installs it into that interpreter's site-packages.
python-install: deps
	cmake -S . -B $(PYTHON_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUPLAN_PYTHON=ON \
	  -DPython_EXECUTABLE=$$(command -v $(PYTHON)) -DGPUPLAN_BUILD_TESTS=OFF -DGPUPLAN_BENCH=OFF
	cmake --build $(PYTHON_BUILD) -j $(JOBS) --target gpuplan_python
	cmake --install $(PYTHON_BUILD) --component python

bench: build
	./$(BUILD)/gpuplan_bench
	PYTHONPATH=$(BUILD)/python $(PY) bench/python_overhead.py

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(PYTHON_BUILD) $(WEB_BUILD) web/dist
