// The EFI implementation of the hardware seam and the platform services.
#pragma once

#include "ap_worker.h"
#include "efi_defs.h"
#include "efi_files.h"
#include "measure_efi.h"
#include "efi_results.h"
#include "efi_serial.h"
#include "efi_tcp.h"
#include "commands/commands.h"
#include "x86/topology.h"

namespace pmulab::efi {

class EfiHw final : public Hw {
public:
    // Locates MP Services (absent: a single CPU) and caches the processor list.
    Status init();
    CpuidRegs cpuid(u32 leaf, u32 subleaf) override;
    Result<u64> rdmsr(u32 msr) override;
    Status wrmsr(u32 msr, u64 value) override;
    Result<u64> rdpmc(u32 index) override;
    u64 rdtsc() override;
    u32 cpu_count() override { return count_; }
    u32 current_cpu() override;
    Result<CpuTopology> topology(u32 cpu) override;
    // On an AP through pmulab's worker there (ap_worker.h).
    Status run_on_cpu(u32 cpu, CpuFn fn, void* ctx) override;
    Result<u32> pci_read32(u32 bus, u32 dev, u32 fn, u32 offset) override;
    // Sends the AP workers back to MP Services (before pmulab returns to the firmware).
    void shutdown_workers() { workers_.shutdown(); }
    // The BSP's index and the AP workers (nmi_probe.cpp runs two CPUs at once).
    u32 bsp() const { return bsp_; }
    ApWorkers& workers() { return workers_; }
    bool enabled(u32 cpu) const { return cpu < count_ && topo_[cpu].enabled; }
    u64 apic_id(u32 cpu) const { return cpu < count_ ? topo_[cpu].apic_id : 0; }
    // The SMT siblings of `cpu` for a measurement there (docs/measure.md "SMT siblings"): each
    // sibling AP's worker is started, so that it halts between jobs; the BSP, when it is one,
    // halts while it waits for `cpu`'s jobs (run_on_cpu). What they do meanwhile.
    SiblingState prepare_siblings(u32 cpu);

private:
    EfiMpServicesProtocol* mp_ = nullptr;
    ApWorkers workers_;
    u32 count_ = 1;
    u32 bsp_ = 0;
    Vec<CpuTopology> topo_;
    TopoLevels levels_;  // the x2APIC ID layout (the BSP's CPUID)
};

// Starts each diagnostic line on the debug port (tools/qemu_run.py DIAG_TAG).
inline constexpr char kDiagTag[] = {'\x01', 'D', 0};  // SOH, then 'D'

class EfiPlatform final : public Platform {
public:
    void init();
    Hw& hw() override { return hw_; }
    EfiHw& efi_hw() { return hw_; }
    void write(StrView text) override;
    void write_diag(StrView text) override;
    const char* firmware_vendor() override { return vendor_; }
    u32 firmware_revision() override;
    MeasurePlatform* measure() override { return &measure_; }
    void now(char* buf, usize cap) override;
    // The TSC-frequency timer (Platform::tsc_frequency): Boot Services Stall().
    Status stall_us(u32 us) override;
    const char* stall_source() override { return "efi_stall"; }
    const char* stall_what() override { return "EFI Boot Services Stall()"; }
    RecordSink* record_sink() override { return results_enabled_ ? &sink_ : nullptr; }
    FileSource* files() override { return &files_; }
    Result<ServeLink*> open_serve_link(int port) override {
        PMULAB_TRY(serial_.open(port, tsc_frequency()));
        return static_cast<ServeLink*>(&serial_);
    }
    Result<ServeLink*> open_tcp_link(const ServeTcpOptions& o) override {
        PMULAB_TRY(tcp_.open(o, tsc_frequency()));
        return static_cast<ServeLink*>(&tcp_);
    }
    // Results files are written when pmulab runs from a file system it can write.
    void enable_results(bool on) { results_enabled_ = on; }
    // Writes only to the debug port (the run-qemu.sh channel), e.g. the exit marker.
    void write_debugcon(StrView text);
    bool debugcon() const { return debugcon_; }
    bool ends_with_newline() const { return last_newline_; }

private:
    EfiHw hw_;
    EfiMeasure measure_{hw_};
    EfiRecordSink sink_;
    EfiFileSource files_;
    EfiSerialLink serial_;
    EfiTcpLink tcp_;
    bool results_enabled_ = true;
    bool debugcon_ = false;
    bool last_newline_ = true;
    char vendor_[64] = {};
};

}  // namespace pmulab::efi
