# sailor — hand-written GNU Makefile.
#   make          builds ./sailor
#   make test     builds and runs every test (unit, golden, integration, PyTorch oracle)
#   make check    the same suite under AddressSanitizer + UBSan (separate build folder)
#   make bench    runs the benchmarks in bench/ and prints their figures
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
MHD_LIBS    := $(shell pkg-config --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd)
ALL_CFLAGS  := -std=c11 -D_GNU_SOURCE -g $(OPT) $(WARN) -fopenmp -MMD -MP -Isrc $(BLAS_CFLAGS) $(MPI_CFLAGS) $(MHD_CFLAGS) $(SANITIZE) $(CFLAGS)
LDLIBS      := -ljansson $(BLAS_LIBS) $(MPI_LIBS) $(MHD_LIBS) -fopenmp -lpthread -lm $(SANITIZE)

LIB_SRCS  := $(sort $(filter-out src/cli/main.c,$(wildcard src/*/*.c src/*/*/*.c)))
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_SRCS := $(sort $(wildcard bench/bench_*.c))
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

.PHONY: all test check bench clean
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
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BUILD)/libsailor.a $(LDLIBS)

test: $(BUILD)/sailor $(UNIT_BINS)
	SAILOR=$(CURDIR)/$(BUILD)/sailor BUILD=$(BUILD) tests/run.sh $(UNIT_BINS)

check:
	$(MAKE) BUILD=build-asan OPT=-O1 SANITIZE="-fsanitize=address,undefined -fno-omit-frame-pointer" \
	    SAILOR_SKIP_SLOW=1 test

bench: $(BUILD)/sailor $(BENCH_BINS)
	SAILOR=$(CURDIR)/$(BUILD)/sailor bench/run.sh $(BENCH_BINS)

clean:
	rm -rf build build-asan sailor

-include $(LIB_OBJS:.o=.d) $(BUILD)/src/cli/main.d
