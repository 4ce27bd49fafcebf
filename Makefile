# sailor — hand-written GNU Makefile.
#   make          builds ./sailor
#   make test     builds and runs every test (unit, golden, integration, PyTorch oracle)
#   make check    the same suite under AddressSanitizer + UBSan (separate build folder)
#   make bench    runs the benchmarks in bench/ and prints their figures
#   make fuzz     builds the fuzz targets (clang's libFuzzer + ASan + UBSan, build-fuzz/) and runs
#                 each for FUZZ_SECONDS (default 60); FUZZ_TARGETS="fuzz_plan ..." picks some
# Sources are discovered by folder, so adding a module is adding a .c/.h pair.

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2
CFLAGS  ?=
WARN    := -Wall -Wextra -Wshadow -Wpointer-arith -Wstrict-prototypes -Wmissing-prototypes \
           -Wvla -Wformat=2 -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN    += -Werror
endif
BLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null || echo -I/usr/include/x86_64-linux-gnu/openblas-pthread)
BLAS_LIBS   := $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
# OpenMPI (the distributed runtime's processes and collectives): Debian's libopenmpi-dev.
MPI_CFLAGS  := $(shell pkg-config --cflags ompi-c 2>/dev/null || echo -I/usr/lib/x86_64-linux-gnu/openmpi/include)
MPI_LIBS    := $(shell pkg-config --libs ompi-c 2>/dev/null || echo -lmpi)
# libmicrohttpd (the controller's /status and /metrics): Debian's libmicrohttpd-dev.
MHD_CFLAGS  := $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
ALL_CFLAGS  := -std=c11 -D_GNU_SOURCE -g $(OPT) $(WARN) -fopenmp -MMD -MP -Isrc $(BLAS_CFLAGS) $(MPI_CFLAGS) $(MHD_CFLAGS) $(SANITIZE) $(CFLAGS)
# OpenBLAS and libmicrohttpd are opened when first used (dlopen: src/util/shared_lib.h), not
# linked: every process would load them and their 11 dependencies at start. Only the sgemm
# benchmark, which calls OpenBLAS's own threading beside ours, links it.
LDLIBS      := -ljansson $(MPI_LIBS) -fopenmp -lpthread -lm $(SANITIZE)

LIB_SRCS  := $(sort $(filter-out src/cli/main.c,$(wildcard src/*/*.c src/*/*/*.c)))
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_SRCS := $(sort $(wildcard bench/bench_*.c))
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)
# Fuzz targets (fuzz/fuzz_*.c): built with libFuzzer by `make fuzz-build`, and with the normal
# compiler plus a plain main() (fuzz/replay_main.c) into replay binaries that `make test` runs
# over the regression corpus fuzz/corpus-regression/<target>/.
FUZZ_SRCS   := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_NAMES  := $(FUZZ_SRCS:fuzz/%.c=%)
REPLAY_BINS := $(FUZZ_NAMES:%=$(BUILD)/fuzz-replay/%)
FUZZ_CC      ?= clang
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(FUZZ_NAMES)
FUZZ_SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
                 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link

.PHONY: all test check bench clean fuzz fuzz-build fuzz-bins
all: sailor

sailor: $(BUILD)/sailor
	cp $< $@

$(BUILD)/sailor: $(BUILD)/src/cli/main.o $(BUILD)/libsailor.a
	$(CC) -o $@ $^ $(LDLIBS)

$(BUILD)/libsailor.a: $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libsailor.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BUILD)/libsailor.a -lcmocka $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(BUILD)/libsailor.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BUILD)/libsailor.a $(LDLIBS) $(BLAS_LIBS)

$(BUILD)/fuzz-replay/%: fuzz/%.c fuzz/replay_main.c fuzz/fuzz_util.h $(BUILD)/libsailor.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Ifuzz -DSAILOR_SOURCE_DIR='"$(CURDIR)"' -o $@ $< fuzz/replay_main.c \
	    $(BUILD)/libsailor.a $(LDLIBS)

$(BUILD)/fuzz/%: fuzz/%.c fuzz/fuzz_util.h $(BUILD)/libsailor.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Ifuzz -DSAILOR_SOURCE_DIR='"$(CURDIR)"' -fsanitize=fuzzer -o $@ $< \
	    $(BUILD)/libsailor.a $(LDLIBS)

test: $(BUILD)/sailor $(UNIT_BINS) $(REPLAY_BINS)
	SAILOR=$(CURDIR)/$(BUILD)/sailor BUILD=$(BUILD) tests/run.sh $(UNIT_BINS)

# Undefined behaviour stops the program (-fno-sanitize-recover), so that it fails the test that
# reaches it rather than print a line nobody reads.
check:
	$(MAKE) BUILD=build-asan OPT=-O1 \
	    SANITIZE="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
	    SAILOR_SKIP_SLOW=1 test

bench: $(BUILD)/sailor $(BENCH_BINS)
	SAILOR=$(CURDIR)/$(BUILD)/sailor bench/run.sh $(BENCH_BINS)

# libFuzzer comes with clang (Debian: clang and libclang-rt-14-dev); say so when it is missing.
fuzz-build:
	@printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return (int)(n && d[0] == 1) * 0; }\n' \
	    | $(FUZZ_CC) -fsanitize=fuzzer,address,undefined -x c - -o /dev/null 2>/dev/null || { \
	    echo "make fuzz: '$(FUZZ_CC) -fsanitize=fuzzer' does not link: install clang and its" \
	         "libFuzzer runtime (Debian: apt-get install clang libclang-rt-14-dev, or" \
	         "scripts/install-deps.sh --with-fuzz), or set FUZZ_CC" >&2; exit 1; }
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) OPT=-O1 SANITIZE="$(FUZZ_SANITIZE)" fuzz-bins

fuzz-bins: $(FUZZ_NAMES:%=$(BUILD)/fuzz/%)

fuzz: fuzz-build
	FUZZ_BUILD=$(FUZZ_BUILD) scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

clean:
	rm -rf build build-asan build-fuzz sailor

-include $(LIB_OBJS:.o=.d) $(BUILD)/src/cli/main.d
