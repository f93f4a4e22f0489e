// `run --lbr` (measure_cmd.h): the last-branch records of every measured run, read on the
// measuring CPU by hooks chained around the first group's own, then one {"type":"lbr"}
// record per (CPU, benchmark) with the last run's records, and per-basic-block cycle
// timings of the user's code in the text output (llvm-exegesis's LBR latency idea: the
// cycles between consecutive taken branches are those of the basic block between them).
#include "base/fmt.h"
#include "base/json.h"
#include "commands/measure_cmd.h"

namespace pmulab {

namespace {

// The LBR of the CPU the hook runs on.
const LbrInfo* info_here(LbrRun* r, Hw& hw) {
    u32 cpu = hw.current_cpu();
    for (usize i = 0; i < r->cpus.size(); ++i)
        if (r->cpus[i] == cpu) return &r->infos[i];
    return nullptr;
}

Status lbr_setup_hook(Hw& hw, void* ctx) {
    LbrRun* r = static_cast<LbrRun*>(ctx);
    if (r->inner.setup) PMULAB_TRY(r->inner.setup(hw, r->inner.ctx));
    r->here = info_here(r, hw);
    r->saved_ok = false;
    r->last.n = 0;
    r->have = false;
    if (!r->here) return Error::make(Errc::internal, "run --lbr: CPU %u was not prepared", hw.current_cpu());
    PMULAB_TRY(lbr_save(hw, *r->here, &r->saved));
    r->saved_ok = true;
    return ok_status();
}

Status lbr_start_hook(Hw& hw, void* ctx) {
    LbrRun* r = static_cast<LbrRun*>(ctx);
    if (r->inner.start) PMULAB_TRY(r->inner.start(hw, r->inner.ctx));
    return lbr_start(hw, *r->here, r->saved, LbrStartOptions());
}

// Recording stops first thing after the code; the stack is read after every run (the last
// run's stays: the long version's last repetition).
Status lbr_stop_hook(Hw& hw, void* ctx) {
    LbrRun* r = static_cast<LbrRun*>(ctx);
    PMULAB_TRY(lbr_stop(hw, *r->here));
    PMULAB_TRY(lbr_read(hw, *r->here, &r->last));
    r->have = true;
    if (r->inner.stop) PMULAB_TRY(r->inner.stop(hw, r->inner.ctx));
    return ok_status();
}

Status lbr_teardown_hook(Hw& hw, void* ctx) {
    LbrRun* r = static_cast<LbrRun*>(ctx);
    Status s = r->saved_ok ? lbr_restore(hw, *r->here, r->saved) : ok_status();
    if (r->inner.teardown) {
        Status t = r->inner.teardown(hw, r->inner.ctx);
        if (s.ok()) s = t;
    }
    return s;
}

// Where an address lies in the user's code (body offsets fold the copies).
struct Place {
    bool user = false;
    CodeBlock block = CodeBlock::harness;
    u64 offset = 0;
};
Place place_of(const Region& rg, u64 addr) {
    Place p;
    u64 code = u64(reinterpret_cast<uintptr_t>(rg.code));
    if (addr < code || addr - code >= rg.code_size) return p;
    FaultPlace f = locate_fault(rg, usize(addr - code));
    p.block = f.block;
    p.offset = f.offset;
    p.user = f.block != CodeBlock::harness;
    return p;
}

void put_place(JsonWriter& w, const char* key, const char* block_key, const Place& p) {
    if (p.user) w.field_u(key, p.offset).field(block_key, code_block_name(p.block));
    else w.key(key).null().key(block_key).null();
}

// One basic block of the body: from the target of a taken branch to the next taken branch.
struct BlockTiming {
    u64 start = 0, end = 0;  // body offsets: the block's first instruction, its branch
    u64 count = 0, min = ~u64(0), max = 0, sum = 0;
};

void add_timing(Vec<BlockTiming>* blocks, u64 start, u64 end, u64 cycles) {
    BlockTiming* b = nullptr;
    for (BlockTiming& t : *blocks)
        if (t.start == start && t.end == end) b = &t;
    if (!b) {
        b = &blocks->push(BlockTiming());
        b->start = start, b->end = end;
    }
    ++b->count;
    b->sum += cycles;
    if (cycles < b->min) b->min = cycles;
    if (cycles > b->max) b->max = cycles;
}

void lbr_text(Out& out, const LbrRun& run, const MeasureResult& r, const Vec<BlockTiming>& blocks) {
    const LbrInfo& l = run.infos[run.index_of(r.cpu)];
    StrBuf t;
    t.printf("LBR %s on CPU %u (%s %s, %u entries): %u records of the last run\n", bench_name(*r.bench), r.cpu,
             lbr_kind_name(l.kind), l.model, l.depth, run.last.n);
    if (!l.cycles) t.put("  (this LBR has no cycle counts: no basic-block timings)\n");
    else if (blocks.empty()) t.put("  no basic block of the body between two recorded branches\n");
    else t.put("  basic block (body offsets)   times   cycles min      avg      max\n");
    for (const BlockTiming& b : blocks) {
        char range[40];
        format_to(range, sizeof range, "0x%llx..0x%llx", (unsigned long long)b.start, (unsigned long long)b.end);
        t.printf("  %-28s %5llu   %10llu %8llu.%02llu %8llu\n", range, (unsigned long long)b.count,
                 (unsigned long long)b.min, (unsigned long long)(b.sum / b.count),
                 (unsigned long long)(b.sum % b.count * 100 / b.count), (unsigned long long)b.max);
    }
    out.text_buf(t);
}

}  // namespace

usize LbrRun::index_of(u32 cpu) const {
    for (usize i = 0; i < cpus.size(); ++i)
        if (cpus[i] == cpu) return i;
    return 0;
}

Status prepare_run_lbr(Hw& hw, const Vec<u32>& cpus, LbrRun* run) {
    Vec<ProbedCpu> probed;
    probe_cpus(hw, cpus, &probed);
    for (const ProbedCpu& p : probed) {
        if (!p.status.ok()) return p.status.error().with_context("run --lbr: CPU %u", p.cpu);
        LbrInfo l;
        lbr_decode(p.probe, p.info, &l);
        if (l.kind == LbrKind::none)
            return Error::make(Errc::unsupported, "run --lbr: CPU %u has no LBR: %s", p.cpu, l.absent);
        run->cpus.push(p.cpu);
        run->infos.push(l);
    }
    return ok_status();
}

void attach_run_lbr(LbrRun* run, ReadGroup* g) {
    GroupHooks h = {lbr_setup_hook, lbr_start_hook, lbr_stop_hook, lbr_teardown_hook, run};
    chain_group_hooks(g, h, &run->inner, &run->first_read);
}

void emit_run_lbr(Out& out, const LbrRun& run, const MeasureResult& r) {
    if (r.read != run.first_read || !run.have || !r.region) return;
    const Region& rg = *r.region;
    Value rec;
    JsonWriter w(rec);
    w.begin_object().field("type", "lbr").field_u("cpu", r.cpu).field("bench", bench_name(*r.bench));
    const LbrInfo& l = run.infos[run.index_of(r.cpu)];
    w.field("lbr", lbr_kind_name(l.kind)).field_u("depth", l.depth);
    if (l.kind == LbrKind::legacy) w.field_u("format", l.format);
    w.key("entries").begin_array();
    Vec<BlockTiming> blocks;
    for (u32 i = 0; i < run.last.n; ++i) {
        const LbrEntry& e = run.last.e[i];
        Place from = place_of(rg, e.from), to = place_of(rg, e.to);
        w.begin_object();
        put_place(w, "from", "from_block", from);
        put_place(w, "to", "to_block", to);
        if (e.has_cycles) w.field_u("cycles", e.cycles);
        else w.key("cycles").null();
        w.field_b("mispredicted", e.mispredicted).field_u("from_addr", e.from).field_u("to_addr", e.to);
        w.end_object();
        if (i == 0 || !e.has_cycles) continue;
        Place start = place_of(rg, run.last.e[i - 1].to);
        if (start.block == CodeBlock::body && from.block == CodeBlock::body && start.offset <= from.offset)
            add_timing(&blocks, start.offset, from.offset, e.cycles);
    }
    w.end_array().end_object();
    out.record(rec);
    if (!out.json()) lbr_text(out, run, r, blocks);
}

}  // namespace pmulab
