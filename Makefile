# The two commands a new user runs (README): `make demo` and `make test`.
# Each installs what is missing (scripts/bootstrap.sh), configures and
# builds through the CMake presets, then runs.
PRESET ?= release
TEST_PRESET ?= dev
DEMO_DIR ?= build/demo

.PHONY: demo test build bootstrap asan tsan fuzz clean

bootstrap:
	@./scripts/bootstrap.sh

build: bootstrap
	cmake --preset $(PRESET) >/dev/null
	cmake --build --preset $(PRESET)

demo: bootstrap
	cmake --preset release >/dev/null
	cmake --build --preset release --target sluice $$(grep -q 'SLUICE_WITH_TORCH_BUILT:INTERNAL=ON' build/release/CMakeCache.txt && echo sluice-train)
	./scripts/demo.sh build/release/src/cli/sluice $(DEMO_DIR)

# The interop tests (CTest label interop) need the real clients in build/venv.
test:
	@./scripts/bootstrap.sh --interop
	cmake --preset $(TEST_PRESET) >/dev/null
	cmake --build --preset $(TEST_PRESET)
	ctest --preset $(TEST_PRESET)

asan: bootstrap
	cmake --preset asan >/dev/null
	cmake --build --preset asan
	ctest --preset asan

tsan: bootstrap
	cmake --preset tsan >/dev/null
	cmake --build --preset tsan
	ctest --preset tsan

# Each fuzz target under libFuzzer + ASan/UBSan (clang) for
# SLUICE_FUZZ_SECONDS (45 s); scripts/fuzz.sh runs longer campaigns.
fuzz:
	@./scripts/bootstrap.sh --fuzz
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz
	ctest --preset fuzz

clean:
	rm -rf build
