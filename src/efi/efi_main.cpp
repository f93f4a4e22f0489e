// pmulab's EFI entry point: console and debug-port output, argument sources
// (shell parameters, load options, \pmulab\pmulab.cfg), the fault layer on the
// BSP, the watchdog, and the final shutdown.
#include "boot_volume.h"
#include "fault.h"
#include "efi_platform.h"
#include "app/config.h"

namespace pmulab::efi {

EFI_SYSTEM_TABLE* gST = nullptr;
EFI_BOOT_SERVICES* gBS = nullptr;
EFI_HANDLE gImage = nullptr;

namespace {

EfiPlatform* g_platform = nullptr;

constexpr u16 kDebugconPort = 0xE9;

inline void outb(u16 port, u8 v) { asm volatile("outb %0, %1" ::"a"(v), "Nd"(port)); }
inline u8 inb(u16 port) {
    u8 v;
    asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}

// Converts ASCII to CHAR16 for ConOut, turning "\n" into "\r\n".
void conout_write(StrView text) {
    CHAR16 buf[256];
    usize n = 0;
    auto flush = [&]() {
        buf[n] = 0;
        gST->ConOut->OutputString(gST->ConOut, buf);
        n = 0;
    };
    for (usize i = 0; i < text.len; ++i) {
        char c = text[i];
        if (n + 3 >= sizeof buf / sizeof buf[0]) flush();
        if (c == '\n') buf[n++] = u'\r';
        buf[n++] = CHAR16(u8(c) < 0x80 ? c : '?');
    }
    if (n) flush();
}

void shell_args_to_utf8(const CHAR16* s, Vec<char>& out) {
    for (; *s; ++s) out.push(*s < 0x80 ? char(*s) : '?');
}

// EFI_SHELL_PARAMETERS_PROTOCOL (UEFI Shell spec §2.3), present when started from the shell.
struct ShellParameters {
    CHAR16** Argv;
    UINTN Argc;
    void* StdIn;
    void* StdOut;
    void* StdErr;
};
EFI_GUID kShellParametersGuid = {0x752f3136, 0x4e16, 0x4fdc, {0xa2, 0x2a, 0xe5, 0xf4, 0x68, 0x12, 0xf4, 0xca}};
EFI_GUID kLoadedImageGuid = EFI_LOADED_IMAGE_PROTOCOL_GUID;

bool ends_with_efi(StrView w) { return w.len >= 4 && w.sub(w.len - 4).eq_nocase(".efi"); }

// The command line from the shell or the load options, without the program name.
// Returns an empty string when pmulab was started without arguments.
void gather_command_line(Vec<char>& line) {
    void* iface = nullptr;
    if (gBS->HandleProtocol(gImage, &kShellParametersGuid, &iface) == EFI_SUCCESS && iface) {
        auto* sp = static_cast<ShellParameters*>(iface);
        for (UINTN i = 1; i < sp->Argc; ++i) {
            if (i > 1) line.push(' ');
            // Re-quote words with spaces so that splitting gives them back.
            Vec<char> w;
            shell_args_to_utf8(sp->Argv[i], w);
            bool space = false;
            for (char c : w) space |= (c == ' ');
            if (space) line.push('"');
            for (char c : w) line.push(c);
            if (space) line.push('"');
        }
        return;
    }
    EFI_LOADED_IMAGE* li = nullptr;
    if (gBS->HandleProtocol(gImage, &kLoadedImageGuid, reinterpret_cast<void**>(&li)) != EFI_SUCCESS || !li) return;
    if (!li->LoadOptions || li->LoadOptionsSize < 2) return;
    // Boot-entry optional data and shell-less launches pass UCS-2 text.
    const CHAR16* opt = static_cast<const CHAR16*>(li->LoadOptions);
    usize n = li->LoadOptionsSize / 2;
    Vec<char> raw;
    for (usize i = 0; i < n && opt[i]; ++i) {
        if (opt[i] >= 0x80 || (opt[i] < 0x20 && opt[i] != '\t')) return;  // not text: ignore
        raw.push(char(opt[i]));
    }
    StrView v(raw.data(), raw.size());
    v = v.trim();
    // Drop the program name when the loader put it first.
    usize sp = v.find(' ');
    if (ends_with_efi(v.sub(0, sp))) v = v.sub(sp).trim();
    for (usize i = 0; i < v.len; ++i) line.push(v[i]);
}

// Waits for a key press on the console (no timeout: a person is reading).
void wait_for_key() {
    if (!gST->ConIn) return;
    gST->ConIn->Reset(gST->ConIn, FALSE);
    UINTN index = 0;
    gBS->WaitForEvent(1, &gST->ConIn->WaitForKey, &index);
    EFI_INPUT_KEY key;
    gST->ConIn->ReadKeyStroke(gST->ConIn, &key);
}

int run_line(EfiPlatform& p, StrView line, const char* origin, u32 line_no, GlobalOptions* g) {
    ArgVec av;
    Status s = split_command_line(line, &av);
    if (!s.ok()) {
        Out out(p, false);
        if (line_no) out.error_msg(Errc::invalid_argument, "%s:%u: %s", origin, line_no, s.error().msg);
        else out.error(s.error());
        return kExitUsage;
    }
    return app_run(p, av.argc(), av.argv.data(), g);
}

const char kConfigPath[] = "\\pmulab\\pmulab.cfg";
const char kCmdlinePath[] = "\\pmulab\\cmdline";

}  // namespace

void EfiPlatform::init() {
    // The debug port is pmulab's channel to run-qemu.sh: only under a hypervisor,
    // and only when the port reads back 0xE9 as QEMU's debugcon does.
    u32 ecx;
    u32 a = 1, b, c = 0, d;
    asm volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
    ecx = c;
    bool hv = (ecx >> 31) & 1;
    debugcon_ = hv && inb(kDebugconPort) == 0xE9;
    const CHAR16* fv = gST->FirmwareVendor;
    usize i = 0;
    for (; fv && fv[i] && i + 1 < sizeof vendor_; ++i) vendor_[i] = fv[i] < 0x80 ? char(fv[i]) : '?';
    vendor_[i] = 0;
    files_.set_diagnostics(this);
    measure_.set_cpus(&hw_);
}

u32 EfiPlatform::firmware_revision() { return gST->FirmwareRevision; }

void EfiPlatform::now(char* buf, usize cap) {
    EFI_TIME t{};
    if (gST->RuntimeServices->GetTime(&t, nullptr) != EFI_SUCCESS) {
        if (cap) buf[0] = 0;
        return;
    }
    format_to(buf, cap, "%04u-%02u-%02uT%02u:%02u:%02u", t.Year, t.Month, t.Day, t.Hour, t.Minute, t.Second);
}

Status EfiPlatform::stall_us(u32 us) {
    EFI_STATUS st = gST->BootServices->Stall(us);
    if (st != EFI_SUCCESS)
        return Error::make(Errc::fault, "EFI Stall(%u) failed (status 0x%llx)", us, (unsigned long long)st);
    return ok_status();
}

void EfiPlatform::write_debugcon(StrView text) {
    if (!debugcon_) return;
    for (usize i = 0; i < text.len; ++i) outb(kDebugconPort, u8(text[i]));
    if (text.len) last_newline_ = text[text.len - 1] == '\n';
}

void EfiPlatform::write(StrView text) {
    if (text.empty()) return;
    conout_write(text);
    write_debugcon(text);
}

// The console shows diagnostics with the rest; on the debug port each of their lines
// starts with kDiagTag, which run-qemu.sh strips before routing the line to its stderr.
void EfiPlatform::write_diag(StrView text) {
    if (text.empty()) return;
    conout_write(text);
    if (!debugcon_) return;
    if (!last_newline_) write_debugcon("\n");  // a tag only counts at a line's start
    usize start = 0;
    while (start < text.len) {
        usize nl = text.find('\n', start);
        usize end = nl < text.len ? nl + 1 : text.len;
        write_debugcon(kDiagTag);
        write_debugcon(text.sub(start, end - start));
        start = end;
    }
    if (!last_newline_) write_debugcon("\n");
}

namespace {

// The command line: the shell's or the load options', else \pmulab\cmdline (one command
// line, what run-qemu.sh writes) before the campaign file; empty when neither has one.
void command_line(Vec<char>& line) {
    gather_command_line(line);
    if (!StrView(line.data(), line.size()).trim().empty()) return;
    Result<Vec<char>> cl = read_boot_volume_file(kCmdlinePath);
    if (!cl.ok()) return;
    StrView v = StrView(cl.value().data(), cl.value().size()).trim();
    for (usize i = 0; i < v.len; ++i) line.push(v[i] == '\n' || v[i] == '\r' ? ' ' : v[i]);
    if (line.empty()) line.push(' ');
}

// \pmulab\pmulab.cfg: the whole campaign is checked before any of it runs (the same check
// as pmulab-check on the host); its --shutdown counts even when it is rejected.
int run_campaign(EfiPlatform& p, Out& out, StrView text, bool* shutdown) {
    CampaignCheck check;
    check_campaign(text, kConfigPath, &check);
    *shutdown = check.shutdown;
    if (!check.problems.empty()) {
        for (const CampaignProblem& pr : check.problems) out.error_msg(Errc::invalid_argument, "%s", pr.msg);
        if (check.commands) out.error_msg(Errc::invalid_argument, "%s has errors; nothing was run", kConfigPath);
        return kExitUsage;
    }
    int status = kExitOk;
    Vec<ConfigLine> lines;
    Status ps = parse_config(text, kConfigPath, &lines);  // checked above: cannot fail
    for (ConfigLine& cl : lines) {
        if (!ps.ok() || cl.bad) break;
        // A line of global options only (e.g. "--shutdown") is a directive.
        bool directive = true;
        for (char* w : cl.args.argv) directive &= str_eq(w, "--shutdown");
        if (directive) continue;
        GlobalOptions g;
        char origin[64];
        format_to(origin, sizeof origin, "%s:%u", kConfigPath, cl.line_no);
        int st = app_run(p, cl.args.argc(), cl.args.argv.data(), &g, origin);
        *shutdown |= g.shutdown;
        if (st != kExitOk && status == kExitOk) status = st;
    }
    return status;
}

// No arguments, no config: the census, then a pointer to help.
int run_without_arguments(EfiPlatform& p) {
    GlobalOptions g;
    const char* argv[] = {"info"};
    int status = app_run(p, 1, argv, &g);
    const char* hargv[] = {"help"};
    p.write(StrView("\n"));
    app_run(p, 1, hargv, &g);
    p.write(StrView("\nNo \\pmulab\\pmulab.cfg on this volume: put a campaign there (one command per "
                    "line, '--shutdown' to power off).\nPress any key to return to the firmware.\n"));
    wait_for_key();
    return status;
}

// Runs what pmulab was started for: the command line, else the campaign file.
int run_commands(EfiPlatform& p, Out& out, bool* shutdown) {
    Vec<char> line;
    command_line(line);
    if (!StrView(line.data(), line.size()).trim().empty()) {
        GlobalOptions g;
        int status = run_line(p, StrView(line.data(), line.size()), "command line", 0, &g);
        *shutdown = g.shutdown;
        return status;
    }
    Result<Vec<char>> cfg = read_boot_volume_file(kConfigPath);
    if (cfg.ok()) return run_campaign(p, out, StrView(cfg.value().data(), cfg.value().size()), shutdown);
    if (cfg.error().code == Errc::not_found) return run_without_arguments(p);
    out.error(cfg.error());
    return kExitFailure;
}

}  // namespace

int efi_run() {
    EfiPlatform& p = *g_platform;
    p.init();
    Status hs = p.efi_hw().init();
    Out out(p, false);
    if (!hs.ok()) {
        out.error(hs.error());
        return kExitFailure;
    }
    Status fs = fault_layer_init();
    if (!fs.ok()) {
        out.error(fs.error());
        return kExitFailure;
    }
    SavedIdtr saved_idt = fault_layer_enter();
    bool shutdown = false;
    int status = run_commands(p, out, &shutdown);
    p.efi_hw().shutdown_workers();  // they use the exception tables freed next
    fault_layer_leave(saved_idt);
    fault_layer_fini();

    // The exit marker for run-qemu.sh (debug port only).
    char marker[48];
    format_to(marker, sizeof marker, "%s@@pmulab-exit %d@@\n", p.ends_with_newline() ? "" : "\n", status);
    p.write_debugcon(StrView(marker));
    if (shutdown) gST->RuntimeServices->ResetSystem(EfiResetShutdown, EFI_SUCCESS, 0, nullptr);
    return status;
}

}  // namespace pmulab::efi

namespace pmulab {

[[noreturn]] void panic(const char* msg) {
    using namespace efi;
    if (g_platform) {
        char line[Error::kMsgMax + 32];  // one diagnostic line (stderr under run-qemu.sh)
        format_to(line, sizeof line, "pmulab: fatal: %s\n", msg);
        g_platform->write_diag(StrView(line));
        char marker[48];
        format_to(marker, sizeof marker, "\n@@pmulab-exit %d@@\n", int(kExitInternal));
        g_platform->write_debugcon(StrView(marker));
    }
    if (gST) gST->RuntimeServices->ResetSystem(EfiResetShutdown, EFI_ABORTED, 0, nullptr);
    for (;;) asm volatile("cli; hlt");
}

}  // namespace pmulab

// gnu-efi's crt0 converts the firmware's MS-ABI call and calls efi_main with the SysV ABI.
extern "C" EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE* st) {
    using namespace pmulab::efi;
    gST = st;
    gBS = st->BootServices;
    gImage = image;
    // Long campaigns must not be reset by the 5-minute boot watchdog.
    gBS->SetWatchdogTimer(0, 0, 0, nullptr);
    // No global constructors: the platform object lives on the stack.
    EfiPlatform platform;
    g_platform = &platform;
    int status = efi_run();
    g_platform = nullptr;
    // Re-arm the firmware's default boot watchdog before handing control back.
    gBS->SetWatchdogTimer(300, 0, 0, nullptr);
    return status == 0 ? EFI_SUCCESS : EFI_ABORTED;
}
