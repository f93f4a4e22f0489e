# pmulab build. `make` builds build/pmulab.efi and the host tools; `make test`
# runs every test (host unit tests + QEMU integration tests, under pytest) and ends with
# "N passed, N failed"; `make check` the fast part (no QEMU); `make bench` prints
# pmulab's own performance figures.

CLANGXX     ?= clang++
HOSTCXX     ?= clang++
LD_EFI      ?= ld.lld
OBJCOPY     ?= objcopy
PYTHON      ?= python3
EFIINC      ?= /usr/include/efi
EFILIB      ?= /usr/lib
BUILD       := build

VERSION := $(shell git describe --always --dirty --tags 2>/dev/null || echo unknown)

# The portable core, layer by layer (tools/check-layers.py keeps includes flowing down).
LAYERS    := base x86 events pmu measure census app commands
CORE_SRCS := $(sort $(foreach l,$(LAYERS),$(wildcard src/$(l)/*.cpp)))
CORE_HDRS := $(sort $(foreach l,$(LAYERS),$(wildcard src/$(l)/*.h)))
EFI_SRCS  := $(sort $(wildcard src/efi/*.cpp))
EFI_ASM   := $(sort $(wildcard src/efi/*.S)) src/measure/kernel_bodies.S
HOST_LIB_SRCS := $(sort $(wildcard src/host/lib/*.cpp))
# The simulated CPUs (src/sim) are host-only: host tools and tests link them, the EFI binary never.
SIM_SRCS  := $(sort $(wildcard src/sim/*.cpp))
TEST_SRCS := $(sort $(wildcard tests/unit/*/*.cpp tests/support/*.cpp))

WARN := -Wall -Wextra -Wno-unused-parameter -Werror=return-type -Werror=format
COMMON_CXXFLAGS := -std=c++20 -fno-exceptions -fno-rtti -Isrc -Iinclude -I$(BUILD)/gen $(WARN)

EFI_CXXFLAGS := $(COMMON_CXXFLAGS) -target x86_64-unknown-linux-gnu -ffreestanding -nostdinc++ \
	-fno-stack-protector -fno-stack-check -fpic -fshort-wchar -mno-red-zone \
	-fno-asynchronous-unwind-tables -fno-unwind-tables -fno-threadsafe-statics \
	-fno-use-cxa-atexit -DGNU_EFI_USE_MS_ABI -I$(EFIINC) -I$(EFIINC)/x86_64 -Isrc/efi -O2 -g
EFI_LDFLAGS := -nostdlib -znocombreloc -T src/efi/pmulab.lds -shared -Bsymbolic --no-undefined --apply-dynamic-relocs \
	-L$(EFILIB) $(EFILIB)/crt0-efi-x86_64.o

HOST_CXXFLAGS := $(COMMON_CXXFLAGS) -O2 -g
TEST_CXXFLAGS := -std=c++20 -Isrc -Iinclude -I$(BUILD)/gen -Itests -Isrc/host/lib $(WARN) -O1 -g \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-sanitize=vptr
TEST_LDFLAGS  := -fsanitize=address,undefined -lgtest -lgtest_main -pthread -lunicorn
# The simulator's executor runs generated code on Unicorn (libunicorn-dev; docs/sim.md).
HOST_LDLIBS   := -lunicorn

EFI_OBJS  := $(patsubst src/%.cpp,$(BUILD)/efi/%.o,$(CORE_SRCS) $(EFI_SRCS)) \
	$(patsubst src/%.S,$(BUILD)/efi/%.o,$(EFI_ASM))
HOST_CORE_OBJS := $(patsubst src/%.cpp,$(BUILD)/host/%.o,$(CORE_SRCS) $(HOST_LIB_SRCS) $(SIM_SRCS)) \
	$(BUILD)/host/measure/kernel_bodies.o
TEST_CORE_OBJS := $(patsubst src/%.cpp,$(BUILD)/test/%.o,$(CORE_SRCS) $(HOST_LIB_SRCS) $(SIM_SRCS))
TEST_OBJS := $(patsubst tests/%.cpp,$(BUILD)/test/%.o,$(TEST_SRCS))

# Every src/host/NAME.cpp is a host tool build/host/NAME (underscores become dashes).
HOST_TOOL_SRCS := $(sort $(wildcard src/host/*.cpp))
HOST_TOOLS := $(foreach f,$(HOST_TOOL_SRCS),$(BUILD)/host/$(subst _,-,$(basename $(notdir $(f)))))

.PHONY: format all test check unit-test qemu-test bench fuzz image sign clean deps
all: $(BUILD)/pmulab.efi $(HOST_TOOLS) $(BUILD)/gen/pmulab-options.json

# Every command's options as data (what `pmulab help --json` prints), for the Python
# tools (tools/pmulab_asm.py: pmulab_options); docs/options.md.
$(BUILD)/gen/pmulab-options.json: $(BUILD)/host/pmulab-check
	@$< --help-json > $@.tmp.$$$$ && mv -f $@.tmp.$$$$ $@

# The version string (git describe), rewritten only when it changes so that
# objects including pmulab/version.h rebuild exactly then. The temporary file is
# per process (`$$$$`) and renamed into place, so concurrent makes never collide.
$(BUILD)/gen/pmulab_version.h: FORCE
	@mkdir -p $(dir $@)
	@echo '#define PMULAB_VERSION "$(VERSION)"' > $@.tmp.$$$$ && \
	  { cmp -s $@.tmp.$$$$ $@ && rm -f $@.tmp.$$$$ || mv -f $@.tmp.$$$$ $@; }
FORCE:

# Installs the build and test dependencies (Debian; apt-get as root or via sudo); a quick
# no-op when everything is there. Only `make test` runs it itself (first, once); `make`
# and the other targets expect the packages (run `make deps` once on a fresh machine).
deps:
	@tools/install-deps.sh

$(BUILD)/efi/%.o: src/%.cpp | $(BUILD)/gen/pmulab_version.h
	@mkdir -p $(dir $@)
	@echo "  CXX(efi) $<"; $(CLANGXX) $(EFI_CXXFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/efi/%.o: src/%.S
	@mkdir -p $(dir $@)
	$(CLANGXX) -target x86_64-unknown-linux-gnu -fpic -c $< -o $@

$(BUILD)/pmulab.so: $(EFI_OBJS) src/efi/pmulab.lds
	$(LD_EFI) $(EFI_LDFLAGS) $(EFI_OBJS) -lgnuefi -o $@

$(BUILD)/pmulab.efi: $(BUILD)/pmulab.so
	$(OBJCOPY) -j .text -j .sdata -j .data -j .dynamic -j .dynsym -j .rel -j .rela -j .rel.* -j .rela.* \
		-j .reloc --target efi-app-x86_64 --subsystem=10 $< $@
	@echo "built $@ ($(VERSION))"

$(BUILD)/host/%.o: src/%.S
	@mkdir -p $(dir $@)
	$(HOSTCXX) -c $< -o $@

$(BUILD)/host/%.o: src/%.cpp | $(BUILD)/gen/pmulab_version.h
	@mkdir -p $(dir $@)
	@echo "  CXX(host) $<"; $(HOSTCXX) $(HOST_CXXFLAGS) -Isrc/host/lib -MMD -MP -c $< -o $@

define host_tool_rule
$(BUILD)/host/$(subst _,-,$(basename $(notdir $(1)))): $(patsubst src/%.cpp,$(BUILD)/host/%.o,$(1)) $(HOST_CORE_OBJS)
	$$(HOSTCXX) $$^ $$(HOST_LDLIBS) -o $$@
endef
$(foreach f,$(HOST_TOOL_SRCS),$(eval $(call host_tool_rule,$(f))))

$(BUILD)/test/%.o: src/%.cpp | $(BUILD)/gen/pmulab_version.h
	@mkdir -p $(dir $@)
	@echo "  CXX(test) $<"; $(HOSTCXX) $(TEST_CXXFLAGS) -fno-exceptions -fno-rtti -MMD -MP -c $< -o $@

$(BUILD)/test/%.o: tests/%.cpp | $(BUILD)/gen/pmulab_version.h
	@mkdir -p $(dir $@)
	@echo "  CXX(test) $<"; $(HOSTCXX) $(TEST_CXXFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/test/unit-tests: $(TEST_OBJS) $(TEST_CORE_OBJS)
	$(HOSTCXX) $^ $(TEST_LDFLAGS) -o $@

unit-test: $(BUILD)/test/unit-tests
	$(BUILD)/test/unit-tests

# The tests run under pytest (pytest.ini, tests/conftest.py) through tests/run_tests.py,
# which picks an interpreter that has pytest, pytest-xdist and mypy (/usr/bin/python3 when
# $(PYTHON) lacks them) and ends with one line "N passed, N failed". Tiers are markers:
# unit (GoogleTest cases), host (host tools, mypy), qemu (boots; 2 in parallel).
# TEST_ARGS go to pytest: make check TEST_ARGS='-k topdown'.
TEST_ARGS ?=

# Everything: unit, host and QEMU tests; one summary line.
# The packages are installed first, as a step of its own (a sub-make builds only after
# it, also under -j).
test: deps
	$(MAKE) all $(BUILD)/test/unit-tests
	$(PYTHON) tests/run_tests.py $(TEST_ARGS)

# The fast tier: unit + host tests, no QEMU boot.
check: all $(BUILD)/test/unit-tests
	$(PYTHON) tests/run_tests.py -m 'not qemu' $(TEST_ARGS)

qemu-test: all
	$(PYTHON) tests/run_tests.py -m qemu $(TEST_ARGS)

bench: all $(BUILD)/bench/null.efi
	$(PYTHON) tests/bench.py

# Baseline app for the boot-time figure: powers off at once.
$(BUILD)/bench/null.efi: tests/bench/null_app.cpp src/efi/pmulab.lds
	@mkdir -p $(dir $@)
	$(CLANGXX) $(EFI_CXXFLAGS) -c $< -o $(BUILD)/bench/null.o
	$(LD_EFI) $(EFI_LDFLAGS) $(BUILD)/bench/null.o -lgnuefi -o $(BUILD)/bench/null.so
	$(OBJCOPY) -j .text -j .sdata -j .data -j .dynamic -j .dynsym -j .rel -j .rela -j .rel.* -j .rela.* \
		-j .reloc --target efi-app-x86_64 --subsystem=10 $(BUILD)/bench/null.so $@

# A GPT disk image with one EFI system partition, ready for `dd` to a USB stick:
# \EFI\BOOT\BOOTX64.EFI, \pmulab\pmulab.cfg (CONFIG=...), \pmulab\results\, and the
# event files $(EVENTS)/*.evt as \pmulab\events\*.evt (EVENTS=DIR: e.g. the output of
# tools/pmulab-events; the default is the sample generated from tests/data/perfmon).
# CONFIG is checked first with build/host/pmulab-check, as pmulab checks it on boot.
CONFIG ?= tools/pmulab.cfg
IMAGE_EFI ?= $(BUILD)/pmulab.efi
EVENTS ?= tests/data/events
EVENT_FILES = $(sort $(wildcard $(EVENTS)/*.evt))
image: $(BUILD)/pmulab.img
$(BUILD)/pmulab.img: $(IMAGE_EFI) $(CONFIG) tools/mkimage.sh $(EVENT_FILES) $(BUILD)/host/pmulab-check FORCE
	@$(PYTHON) tools/pmulab-asm --campaign $(CONFIG) $(BUILD)/image-check.cfg  # --asm assembled, line for line
	@$(BUILD)/host/pmulab-check $(BUILD)/image-check.cfg 2> $(BUILD)/image-check.err || { \
		sed 's|$(BUILD)/image-check.cfg|$(CONFIG)|' $(BUILD)/image-check.err >&2; \
		echo "make image: $(CONFIG) has errors (pmulab would run none of it)" >&2; exit 2; }
	tools/mkimage.sh $@ $(IMAGE_EFI) $(CONFIG) $(foreach f,$(EVENT_FILES),$(f)=::/pmulab/events/$(notdir $(f)))
	@echo "built $@ (config $(CONFIG), $(words $(EVENT_FILES)) event files from $(EVENTS))"

# Secure Boot: sign with your own key (enrolled in the firmware's db), e.g.
#   make sign KEY=db.key CERT=db.crt  ->  build/pmulab-signed.efi and an image using it.
sign: $(BUILD)/pmulab.efi
	@test -n "$(KEY)" -a -n "$(CERT)" || { echo "usage: make sign KEY=key.pem CERT=cert.pem"; exit 2; }
	@command -v sbsign >/dev/null || { echo "sbsign missing: apt-get install sbsigntool"; exit 1; }
	sbsign --key $(KEY) --cert $(CERT) --output $(BUILD)/pmulab-signed.efi $(BUILD)/pmulab.efi
	$(MAKE) image IMAGE_EFI=$(BUILD)/pmulab-signed.efi

# libFuzzer target over the event-list and event-file parsers and the counter allocator.
# `make fuzz` builds build/fuzz/fuzz_events (core sources + the target, which defines the
# host panic hook) and runs it for FUZZ_TIME seconds, seeded from tests/fuzz/corpus/events/;
# new corpus entries go to build/fuzz/corpus-events/, crashers to tests/fuzz/crashers/
# (tests/unit/events/test_fuzz_replay.cpp replays both directories).
FUZZ_TIME ?= 30
FUZZ_CXXFLAGS := -std=c++20 -Isrc -Iinclude -Itests $(WARN) -O1 -g -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -DPMULAB_VERSION='"$(VERSION)"'
$(BUILD)/fuzz/fuzz_events: tests/fuzz/fuzz_events.cpp tests/fuzz/fuzz_events_body.h $(CORE_SRCS) \
		$(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(HOSTCXX) $(FUZZ_CXXFLAGS) tests/fuzz/fuzz_events.cpp $(CORE_SRCS) -o $@

# fuzz_inputs: campaign configs, JSON records and CPUID dumps (first byte picks the parser).
$(BUILD)/fuzz/fuzz_inputs: tests/fuzz/fuzz_inputs.cpp tests/fuzz/fuzz_inputs_body.h $(CORE_SRCS) \
		$(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(HOSTCXX) $(FUZZ_CXXFLAGS) tests/fuzz/fuzz_inputs.cpp $(CORE_SRCS) -o $@

# fuzz_serve: the `pmulab serve` request parser and record tagger (src/app/serve_request.cpp).
$(BUILD)/fuzz/fuzz_serve: tests/fuzz/fuzz_serve.cpp tests/fuzz/fuzz_serve_body.h $(CORE_SRCS) $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(HOSTCXX) $(FUZZ_CXXFLAGS) tests/fuzz/fuzz_serve.cpp $(CORE_SRCS) -o $@

fuzz: $(BUILD)/fuzz/fuzz_events $(BUILD)/fuzz/fuzz_inputs $(BUILD)/fuzz/fuzz_serve
	@mkdir -p $(BUILD)/fuzz/corpus-events $(BUILD)/fuzz/corpus-inputs $(BUILD)/fuzz/corpus-serve tests/fuzz/crashers
	$(BUILD)/fuzz/fuzz_events -max_total_time=$(FUZZ_TIME) -print_final_stats=1 -dict=tests/fuzz/events.dict \
		-artifact_prefix=tests/fuzz/crashers/ $(BUILD)/fuzz/corpus-events tests/fuzz/corpus/events
	$(BUILD)/fuzz/fuzz_inputs -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
		-artifact_prefix=tests/fuzz/crashers/inputs- $(BUILD)/fuzz/corpus-inputs tests/fuzz/corpus/inputs
	$(BUILD)/fuzz/fuzz_serve -max_total_time=$(FUZZ_TIME) -print_final_stats=1 -max_len=500000 \
		-artifact_prefix=tests/fuzz/crashers/serve- $(BUILD)/fuzz/corpus-serve tests/fuzz/corpus/serve

# Formats the C++ tree with .clang-format (tests/py/test_layers.py checks it is formatted).
FORMAT_FILES = $(shell git ls-files 'src/*.cpp' 'src/*.h' 'tests/unit/*.cpp' 'tests/unit/*.h' \
	'tests/support/*.cpp' 'tests/support/*.h' 'tests/fuzz/*.cpp' 'tests/fuzz/*.h' 'tests/bench/*.cpp')
format:
	clang-format -i $(FORMAT_FILES)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' -type f 2>/dev/null)
