# oqc - ONNX quantization compiler.  GNU make.
#
#   make              build build/oqc and build/liboqc.a (installs missing Debian packages)
#   make check        build and run every test (unit tests, CLI tests, ONNX node tests)
#   make check SAN=1  the same tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make CC=clang     build with clang (objects go to build/clang/)
#   make install      install oqc, liboqc (static and shared), oqc.h, oqc.pc, oqc(1) and
#                     the docs under PREFIX (/usr/local), staged under DESTDIR; make uninstall
#   make models       regenerate the torchvision models (needs Debian python3-torch)
#   make compare-base [BASE=main]  this tree's oqc against BASE's, output for output
#   make archcheck    the structure criteria: layers, circles of files, lengths
#   make clean
#
# Sources are found by wildcard: a new compiler/, passes/ or runtime/ file, or a new
# tests/unit/test_*.c, is picked up without editing this file.

# The release: `oqc --version`, oqc_version(), oqc.pc and the shared library's name.
VERSION   := 0.2.0
SOVERSION := 0
CC      ?= cc
SAN     ?=
PYTHON  ?= /usr/bin/python3
ONNX_PROTO ?= /usr/include/onnx/onnx.proto

# Each configuration builds into its own directory so gcc, clang and sanitizer objects
# never mix.  The default (gcc, no sanitizer) is build/ itself.
CCNAME := $(notdir $(firstword $(CC)))
ifeq ($(CCNAME),cc)
CCNAME := gcc
endif
CONFIG := $(if $(filter-out gcc,$(CCNAME)),$(CCNAME))$(if $(SAN),$(if $(filter-out gcc,$(CCNAME)),-)san)
BUILD  ?= build$(if $(CONFIG),/$(CONFIG))

WARN    := -Wall -Wextra -Werror -Wshadow -Wno-missing-field-initializers
CSTD    := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
OPT     := -O2 -g
comma := ,
SANFLAGS := $(if $(SAN),-fsanitize=address$(comma)undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
XML_CFLAGS := $(shell pkg-config --cflags libxml-2.0 2>/dev/null || echo -I/usr/include/libxml2)
XML_LIBS   := $(shell pkg-config --libs libxml-2.0 2>/dev/null || echo -lxml2)
# One -I per folder: headers are named by file alone (each name is unique); which
# folder may include which is the layer order of tests/tools/layers.txt.
SRC_DIRS := $(sort $(dir $(wildcard compiler/*/*.c compiler/*/*.h))) passes/ \
            runtime/fp32/ runtime/int8/ runtime/app/
INCLUDES := $(patsubst %/,-I%,$(SRC_DIRS)) -I$(BUILD)/proto
CFLAGS_ALL := $(CSTD) $(OPT) $(WARN) $(SANFLAGS) $(INCLUDES) $(XML_CFLAGS) -pthread $(CFLAGS)
# Kernels: no compiler may fuse a product and a sum on its own (clang does by default,
# gcc does not in ISO mode), so every configuration computes the same bits, the FP32
# GEMM's matrix-vector path can reproduce its microkernels' summation order, and the
# emitted C (built with the same flag, see docs/compile.md) matches oqc bit for bit.
RUNTIME_CFLAGS := -ffp-contract=off
# OQCF_TEST_HOOKS keeps oqcf_sgemm_force_isa() working in liboqc (tests and benchmarks
# force each microkernel family); the copies of runtime/ emitted next to a model are
# built without it and so have no mutable global.
CFLAGS_runtime_fp32_oqcf_sgemm := -DOQCF_TEST_HOOKS
CFLAGS_compiler_base_version := -DOQC_VERSION='"$(VERSION)"'
CFLAGS_compiler_driver_main := -DOQC_VERSION='"$(VERSION)"'
CFLAGS_tests_unit_test_api := -DOQC_VERSION='"$(VERSION)"'
# The INT8 conv: every x86 kernel family compiled (target attributes) and chosen at run
# time, plus oqci_force_isa() for tests and benchmarks (the emitted copies have neither).
# The same flags for every file of it (runtime/int8/oqci_conv*.c: one file per kernel family,
# which must agree on the families compiled in; a mismatch fails at link time).
# Pooling, Add, Mul and table lookup have AVX2 kernels chosen the same way (they follow
# oqci_force_isa()).
OQCI_CONV_CFLAGS := -DOQCI_DISPATCH -DOQCI_TEST_HOOKS
$(foreach f,$(basename $(wildcard runtime/int8/oqci_conv*.c)),$(eval CFLAGS_$(subst /,_,$(f)) := $(OQCI_CONV_CFLAGS)))
CFLAGS_runtime_int8_oqci_pool := -DOQCI_DISPATCH -DOQCI_TEST_HOOKS
CFLAGS_runtime_int8_oqci_eltwise := -DOQCI_DISPATCH -DOQCI_TEST_HOOKS
CFLAGS_runtime_int8_oqci_mul := -DOQCI_DISPATCH -DOQCI_TEST_HOOKS
LDLIBS_ALL := -lprotobuf-c $(XML_LIBS) -ljpeg -lpng -lm -pthread $(LDLIBS)
LDFLAGS_ALL := $(SANFLAGS) $(LDFLAGS)

# runtime/fp32/oqcf_serial.c is oqcf_pool.c + oqcf_threads.c's single-threaded stand-in for emitted code (same
# functions) and runtime/app/oqc_main.c the driver `oqc compile --main` writes: never part of
# liboqc; nor is the CLI driver (compiler/driver/), which only build/oqc links.
CLI_SRCS := $(wildcard compiler/driver/*.c)
CLI_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRCS))
LIB_SRCS := $(filter-out $(CLI_SRCS),$(wildcard compiler/*/*.c)) \
            $(wildcard passes/*.c) \
            $(filter-out runtime/fp32/oqcf_serial.c runtime/app/oqc_main.c,$(wildcard runtime/*/*.c))
LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) $(BUILD)/obj/proto/onnx.pb-c.o
# oqc compile copies runtime sources next to an emitted model; their text is embedded in
# oqc (a table generated from runtime/), so the copies are the sources oqc was built from.
# The copies sit in one folder (file names are unique across runtime/'s folders); the
# table is in file-name order.
RUNTIME_TEXT := $(foreach n,$(sort $(notdir $(wildcard runtime/*/*.c runtime/*/*.h))),$(wildcard runtime/*/$(n)))
LIB_OBJS += $(BUILD)/obj/gen/oqc_runtime_src.o
TEST_SRCS := $(wildcard tests/unit/test_*.c)
TEST_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
TEST_SUPPORT := $(filter-out $(TEST_SRCS),$(wildcard tests/unit/*.c))
# Test programs that are not CUnit suites (e.g. the ONNX node-test runner).
TOOL_SRCS := $(wildcard tests/tools/*.c)
TOOL_BINS := $(patsubst tests/tools/%.c,$(BUILD)/tests/tools/%,$(TOOL_SRCS))
TEST_SUPPORT_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(TEST_SUPPORT))

DEPS_STAMP := build/.deps-ok

.PHONY: all check check-one check-models compare-base archcheck clean deps models bench demo fuzz sqnr install uninstall shared accuracy
# Keep intermediate objects (tests link them); V=1 shows full commands.
.SECONDARY:
Q := $(if $(V),,@)
all: $(BUILD)/oqc $(BUILD)/liboqc.a

# Missing Debian packages are installed (as root) before anything is compiled.
deps: $(DEPS_STAMP)
$(DEPS_STAMP): scripts/install-deps.sh
	@scripts/install-deps.sh
	@mkdir -p $(dir $@) && touch $@
# make check only: the arm64 libraries of the aarch64 test build (install-deps.sh --arm64)
ARM64_STAMP := build/.deps-arm64-ok
$(ARM64_STAMP): scripts/install-deps.sh
	@scripts/install-deps.sh --arm64
	@mkdir -p $(dir $@) && touch $@

# The .proto comes with the packages: on a fresh machine it appears only once they are
# installed, so it waits for them (without this rule `make` stops at once with "No rule
# to make target .../onnx.proto", before install-deps.sh has run).
$(ONNX_PROTO): | $(DEPS_STAMP)

# protobuf-c code is generated from the ONNX .proto Debian's libonnx-dev installs;
# generated files live only in the build directory.  One rule making both files (&:,
# GNU make 4.3): with two plain targets, make -j ran protoc-c twice at once in a fresh
# build directory and one cp failed on the other's file.
$(BUILD)/proto/onnx.pb-c.c $(BUILD)/proto/onnx.pb-c.h &: $(ONNX_PROTO) | $(DEPS_STAMP)
	@mkdir -p $(BUILD)/proto
	cp $(ONNX_PROTO) $(BUILD)/proto/onnx.proto
	cd $(BUILD)/proto && protoc-c --c_out=. onnx.proto

# Generated code is not ours: compile it without -Werror.
$(BUILD)/obj/proto/onnx.pb-c.o: $(BUILD)/proto/onnx.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(OPT) $(SANFLAGS) $(CFLAGS) -w -I$(BUILD)/proto -c $< -o $@

# The runtime sources as byte arrays (od: no quoting to get wrong): oqc_runtime_files[].
$(BUILD)/gen/oqc_runtime_src.c: $(RUNTIME_TEXT)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  GEN     $@")
	$(Q){ echo '/* Generated by the Makefile from runtime/; do not edit. */'; \
	  echo '#include "backend.h"'; i=0; for f in $(RUNTIME_TEXT); do \
	  echo "static const unsigned char f$$i[] = {"; \
	  od -An -v -tx1 $$f | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0};'; i=$$((i+1)); done; \
	  echo 'const OqcRuntimeFile oqc_runtime_files[] = {'; i=0; for f in $(RUNTIME_TEXT); do \
	  echo "{\"$${f##*/}\", f$$i},"; i=$$((i+1)); done; echo '{0, 0}};'; } >$@.tmp && mv $@.tmp $@

$(BUILD)/obj/gen/oqc_runtime_src.o: $(BUILD)/gen/oqc_runtime_src.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(BUILD)/obj/%.o: %.c $(BUILD)/proto/onnx.pb-c.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS_ALL) $(if $(filter runtime/%,$*),$(RUNTIME_CFLAGS)) $(CFLAGS_$(subst /,_,$*)) -MMD -MP -c $< -o $@

$(BUILD)/liboqc.a: $(LIB_OBJS)
	@rm -f $@
	@$(if $(V),,echo "  AR      $@")
	$(Q)ar rcs $@ $^

$(BUILD)/oqc: $(CLI_OBJS) $(BUILD)/liboqc.a
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) $^ $(LDLIBS_ALL) -o $@

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TEST_SUPPORT_OBJS) $(BUILD)/liboqc.a
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) $^ -lcunit $(LDLIBS_ALL) -o $@

# The fuzz target's replay driver links the target itself.
$(BUILD)/tests/tools/fuzz_replay: $(BUILD)/obj/tests/fuzz/fuzz_model.o

$(BUILD)/tests/tools/%: $(BUILD)/obj/tests/tools/%.o $(BUILD)/liboqc.a
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) $(filter %.o,$^) $(filter %.a,$^) $(LDLIBS_ALL) -o $@

# check-one runs every test of this configuration (tests/run.sh: unit tests, node
# tests, CLI tests). `make check` with the default configuration runs the whole matrix
# (gcc, clang, gcc+ASan/UBSan) and ends with one line adding them up; with CC= or
# SAN= given it runs only that configuration.  The three configurations build and run
# side by side (-j3, each one's test log printed as one block when it ends: -O), so
# the matrix takes about the time of its slowest member on a 2-core machine.
check-one: $(BUILD)/oqc $(TEST_BINS) $(TOOL_BINS)
	@BUILD=$(BUILD) SAN=$(SAN) TOTALS=$(TOTALS) sh tests/run.sh

# check-models: the checks on the networks `make models` writes (models/tv/resnet18,
# mobilenet_v2, googlenet: FP32 against PyTorch, every pass's output preservation, BN
# folding, googlenet's merges, shapes, compiled FP32 C; the modern networks of
# make_modern.py: FP32 C against PyTorch, INT8 coverage, INT8 C against oqc eval),
# which `make check` leaves out;
# run it after `make models`: a missing network fails, it is never skipped.
MODEL_TESTS := test_fp32_models test_passes test_pass_fold_fuse test_pass_merge_concat \
	test_shapes compile_fp32.sh modern_nets.sh
check-models: $(BUILD)/oqc $(TEST_BINS) $(TOOL_BINS)
	@BUILD=$(BUILD) OQC_TEST_MODELS=1 TESTS="$(MODEL_TESTS)" sh tests/run.sh

# make compare-base [BASE=REV]: "behaviour unchanged" against REV (default main): builds
# REV's oqc in a temporary git worktree under $(BUILD)/compare-base (removed afterwards)
# and runs scripts/compare-builds.sh on it and this tree's oqc (docs/testing.md); the
# outputs of models that differ stay in $(BUILD)/compare-out.
BASE ?= main
compare-base: $(BUILD)/oqc
	@git worktree remove --force $(BUILD)/compare-base 2>/dev/null; rm -rf $(BUILD)/compare-base \
	    $(BUILD)/compare-out; git worktree prune
	git worktree add --detach $(BUILD)/compare-base $(BASE)
	@st=0; $(MAKE) --no-print-directory -C $(BUILD)/compare-base $(BUILD)/oqc && \
	    sh scripts/compare-builds.sh $(BUILD)/compare-base/$(BUILD)/oqc $(BUILD)/oqc \
	    $(BUILD)/compare-out || st=$$?; \
	    git worktree remove --force $(BUILD)/compare-base; exit $$st

# make archcheck: the structure criteria (tests/tools/archcheck.py: layers, circles of
# files, file and function lengths) on this tree and its objects; docs/testing.md.
# make check runs the same script (tests/cli/architecture.sh).
archcheck: $(BUILD)/oqc $(BUILD)/liboqc.a
	@BUILD=$(BUILD) OQC=$(BUILD)/oqc sh tests/cli/architecture.sh

ifeq ($(CONFIG),)
TOTALS := build/check-totals
CHECK_CONFIGS := check-gcc check-clang check-san
.PHONY: $(CHECK_CONFIGS)
check: | $(DEPS_STAMP) $(ARM64_STAMP)
	@mkdir -p build && rm -f $(TOTALS) build/check-failed
	@$(MAKE) --no-print-directory -j3 -Otarget $(CHECK_CONFIGS)
	@sort $(TOTALS) | awk '{p += $$2; f += $$3; k += $$4; \
	       print "  " $$1 ": " $$2 " passed, " $$3 " failed, " $$4 + 0 " skipped"} \
	     END {print "check: " p " passed, " f " failed, " k + 0 " skipped"}'
	@if [ -e build/check-failed ]; then rm -f build/check-failed; exit 1; fi
check-gcc:
	@$(MAKE) --no-print-directory check-one TOTALS=$(TOTALS) || touch build/check-failed
check-clang:
	@$(MAKE) --no-print-directory check-one CC=clang TOTALS=$(TOTALS) || touch build/check-failed
check-san:
	@$(MAKE) --no-print-directory check-one SAN=1 TOTALS=$(TOTALS) || touch build/check-failed
else
check: check-one
endif

# The main job (scripts/demo.sh): the bundled Fashion-MNIST model compiled to INT8 and
# FP32 C, built and run side by side (accuracy, bytes, latency).
demo: $(BUILD)/oqc
	@BUILD=$(BUILD) CC=$(CC) sh scripts/demo.sh

# (the photo patches that calibrate the torchvision models: numpy, PIL, Debian's photos)
bench: $(BUILD)/oqc
	sh scripts/install-deps.sh python3-numpy python3-pil python3-sklearn python3-matplotlib
	BUILD=$(BUILD) CC=$(CC) sh bench/run.sh

# INT8 accuracy on real trained networks (../shared/devset when present, and the Fashion
# model) per calibration variant of bench/accuracy/variants.txt; docs/accuracy.md.
accuracy: $(BUILD)/oqc
	sh scripts/install-deps.sh python3-numpy python3-pil python3-matplotlib python3-sklearn \
	    python3-skimage dataset-fashion-mnist
	BUILD=$(BUILD) sh bench/accuracy/run.sh

# make fuzz [FUZZ_SECONDS=N]: a libFuzzer campaign (clang, ASan + UBSan) on the fuzz
# target tests/fuzz/fuzz_model.c for FUZZ_SECONDS (default 600); see tests/fuzz/run.sh.
# Not part of `make check`, which replays the kept findings (tests/cli/fuzz_replay.sh).
FUZZ_SECONDS ?= 600
FUZZ_BUILD := build/fuzz
fuzz: | $(DEPS_STAMP)
	@$(MAKE) --no-print-directory CC=clang SAN=1 BUILD=$(FUZZ_BUILD) \
	    CFLAGS=-fsanitize=fuzzer-no-link $(FUZZ_BUILD)/liboqc.a
	clang $(CSTD) -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	    $(WARN) $(patsubst %/,-I%,$(SRC_DIRS)) -I$(FUZZ_BUILD)/proto $(XML_CFLAGS) \
	    tests/fuzz/fuzz_model.c $(FUZZ_BUILD)/liboqc.a $(LDLIBS_ALL) -o $(FUZZ_BUILD)/fuzz_model
	sh tests/fuzz/run.sh $(FUZZ_BUILD)/fuzz_model $(FUZZ_SECONDS)

sqnr: $(BUILD)/oqc
	sh scripts/install-deps.sh python3-numpy python3-pil python3-sklearn python3-matplotlib \
	    python3-torch dataset-fashion-mnist
	BUILD=$(BUILD) sh bench/sqnr.sh

models:
	sh scripts/install-deps.sh python3-torch python3-torchvision python3-onnx python3-numpy \
	    libblas3 dataset-fashion-mnist
	$(PYTHON) models/tv/make_torchvision.py --out models/tv
	$(PYTHON) models/tv/make_modern.py --out models/tv

# ---------------------------------------------------------------- install
# make install [PREFIX=/usr/local] [DESTDIR=stage]: the files below; make uninstall
# removes exactly them.  The shared library is built from position-independent objects
# in $(BUILD)/pic (a second build of liboqc's sources with -fPIC).
PREFIX  ?= /usr/local
BINDIR  := $(PREFIX)/bin
LIBDIR  := $(PREFIX)/lib
INCDIR  := $(PREFIX)/include
MANDIR  := $(PREFIX)/share/man/man1
DOCDIR  := $(PREFIX)/share/doc/oqc
PCDIR   := $(LIBDIR)/pkgconfig
SONAME  := liboqc.so.$(SOVERSION)
DOCS    := README.md $(wildcard docs/*.md docs/*.rng docs/*.json)
INSTALLED := $(BINDIR)/oqc $(LIBDIR)/liboqc.a $(LIBDIR)/liboqc.so.$(VERSION) \
             $(LIBDIR)/$(SONAME) $(LIBDIR)/liboqc.so $(INCDIR)/oqc.h $(PCDIR)/oqc.pc \
             $(MANDIR)/oqc.1 $(addprefix $(DOCDIR)/,$(notdir $(DOCS)))

shared: $(BUILD)/liboqc.so.$(VERSION)
$(BUILD)/liboqc.so.$(VERSION): $(LIB_SRCS) | $(DEPS_STAMP)
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/pic CFLAGS="-fPIC $(CFLAGS)" $(BUILD)/pic/liboqc.a
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,$(SONAME) $(LDFLAGS_ALL) -o $@ \
	    -Wl,--whole-archive $(BUILD)/pic/liboqc.a -Wl,--no-whole-archive $(LDLIBS_ALL)

$(BUILD)/oqc.pc: Makefile
	@mkdir -p $(dir $@)
	@printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' '' \
	    'Name: oqc' 'Description: ONNX quantization compiler library (load, run, compile ONNX models)' \
	    'Version: $(VERSION)' 'Requires.private: libprotobuf-c libxml-2.0' \
	    'Libs: -L$${libdir} -loqc' 'Libs.private: -lm -pthread' 'Cflags: -I$${includedir}' >$@

install: $(BUILD)/oqc $(BUILD)/liboqc.a $(BUILD)/liboqc.so.$(VERSION) $(BUILD)/oqc.pc
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR) $(DESTDIR)$(MANDIR) \
	    $(DESTDIR)$(DOCDIR) $(DESTDIR)$(PCDIR)
	install -m 755 $(BUILD)/oqc $(DESTDIR)$(BINDIR)/oqc
	install -m 644 $(BUILD)/liboqc.a $(DESTDIR)$(LIBDIR)/liboqc.a
	install -m 755 $(BUILD)/liboqc.so.$(VERSION) $(DESTDIR)$(LIBDIR)/liboqc.so.$(VERSION)
	ln -sf liboqc.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/liboqc.so
	install -m 644 compiler/api/oqc.h $(DESTDIR)$(INCDIR)/oqc.h
	install -m 644 $(BUILD)/oqc.pc $(DESTDIR)$(PCDIR)/oqc.pc
	install -m 644 docs/oqc.1 $(DESTDIR)$(MANDIR)/oqc.1
	install -m 644 $(DOCS) $(DESTDIR)$(DOCDIR)/

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
