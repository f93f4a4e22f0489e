/*
 * pmulab's built-in microbenchmark kernel bodies (x86-64, AT&T syntax).
 *
 * Each body lies between pmulab_kb_NAME_start and pmulab_kb_NAME_end; the
 * measurement engine copies those bytes U or 2U times into generated code (see
 * src/measure/measure.h), so a body must be position independent, must not
 * jump outside itself, must not touch RSP or the stack, and must not use R15 (the
 * engine's loop counter). The initial registers come from kernel_init_registers()
 * (src/measure/kernels.cpp); the catalogue there lists each body's exact instruction
 * count, which tests/py/test_qemu_measure.py checks under QEMU -icount.
 *
 * This file is also assembled into the host unit tests (by .include from
 * tests/unit/test_measure_exec.cpp), so it uses no C preprocessor features and
 * only C-style comments.
 */
    .text
    .balign 64

/* empty: 0 instructions */
    .globl pmulab_kb_empty_start
    .globl pmulab_kb_empty_end
pmulab_kb_empty_start:
pmulab_kb_empty_end:

/* nop: 1 instruction */
    .globl pmulab_kb_nop_start
    .globl pmulab_kb_nop_end
pmulab_kb_nop_start:
    nop
pmulab_kb_nop_end:

/* add_chain: 1 instruction, each ADD depends on the previous one */
    .globl pmulab_kb_add_chain_start
    .globl pmulab_kb_add_chain_end
pmulab_kb_add_chain_start:
    add $1, %rax
pmulab_kb_add_chain_end:

/* add_indep: 8 instructions, eight independent chains (each register's chain
   continues in the next copy, so latency 1 never limits below 8 per cycle) */
    .globl pmulab_kb_add_indep_start
    .globl pmulab_kb_add_indep_end
pmulab_kb_add_indep_start:
    add $1, %r8
    add $1, %r9
    add $1, %r10
    add $1, %r11
    add $1, %r12
    add $1, %r13
    add $1, %r14
    add $1, %rbx
pmulab_kb_add_indep_end:

/* imul_chain: 1 instruction; RAX = 1 stays 1 */
    .globl pmulab_kb_imul_chain_start
    .globl pmulab_kb_imul_chain_end
pmulab_kb_imul_chain_start:
    imul %rax, %rax
pmulab_kb_imul_chain_end:

/* div_chain: 1 instruction; RDX:RAX = 0:0x0123456789ABCDEF divided by RCX = 1
   leaves RAX unchanged and RDX = 0, and each DIV waits for the previous one */
    .globl pmulab_kb_div_chain_start
    .globl pmulab_kb_div_chain_end
pmulab_kb_div_chain_start:
    div %rcx
pmulab_kb_div_chain_end:

/* pointer_chase: 1 instruction; RSI = the current node of a random cyclic chain
   (carried from run to run: the chase continues where the last run stopped) */
    .globl pmulab_kb_pointer_chase_start
    .globl pmulab_kb_pointer_chase_end
pmulab_kb_pointer_chase_start:
    mov (%rsi), %rsi
pmulab_kb_pointer_chase_end:

/* store_stream: 3 instructions; RBX = buffer, RSI = offset (carried), RDI = size - 1 */
    .globl pmulab_kb_store_stream_start
    .globl pmulab_kb_store_stream_end
pmulab_kb_store_stream_start:
    mov %rax, (%rbx,%rsi)
    add $64, %rsi
    and %rdi, %rsi
pmulab_kb_store_stream_end:

/* load_stream: 3 instructions; RBX = buffer, RSI = offset (carried), RDI = size - 1 */
    .globl pmulab_kb_load_stream_start
    .globl pmulab_kb_load_stream_end
pmulab_kb_load_stream_start:
    mov (%rbx,%rsi), %rax
    add $64, %rsi
    and %rdi, %rsi
pmulab_kb_load_stream_end:

/* branch_pred and branch_random: 6 instructions on either path.
   R8 = LCG state, R9 = multiplier, R10 = increment; the branch tests bit 63.
     taken:      imul, add, test, js, nop, nop
     not taken:  imul, add, test, js, nop, jmp
   branch_pred runs it with R9 = 1, R10 = 2^63 (bit 63 alternates). */
    .macro pmulab_lcg_branch_body
    imul %r9, %r8
    add %r10, %r8
    test %r8, %r8
    js 1f
    nop
    jmp 2f
1:  nop
    nop
2:
    .endm

    .globl pmulab_kb_branch_pred_start
    .globl pmulab_kb_branch_pred_end
pmulab_kb_branch_pred_start:
    pmulab_lcg_branch_body
pmulab_kb_branch_pred_end:

    .globl pmulab_kb_branch_random_start
    .globl pmulab_kb_branch_random_end
pmulab_kb_branch_random_start:
    pmulab_lcg_branch_body
pmulab_kb_branch_random_end:

/* lfence: 1 instruction */
    .globl pmulab_kb_lfence_start
    .globl pmulab_kb_lfence_end
pmulab_kb_lfence_start:
    lfence
pmulab_kb_lfence_end:

/* mfence: 1 instruction */
    .globl pmulab_kb_mfence_start
    .globl pmulab_kb_mfence_end
pmulab_kb_mfence_start:
    mfence
pmulab_kb_mfence_end:

/* cpuid: 2 instructions (leaf 0 every time) */
    .globl pmulab_kb_cpuid_start
    .globl pmulab_kb_cpuid_end
pmulab_kb_cpuid_start:
    xor %eax, %eax
    cpuid
pmulab_kb_cpuid_end:

/* rdtsc: 1 instruction */
    .globl pmulab_kb_rdtsc_start
    .globl pmulab_kb_rdtsc_end
pmulab_kb_rdtsc_start:
    rdtsc
pmulab_kb_rdtsc_end:

/* rdmsr: 1 instruction; ECX = 0x10 (IA32_TIME_STAMP_COUNTER), which RDMSR preserves */
    .globl pmulab_kb_rdmsr_start
    .globl pmulab_kb_rdmsr_end
pmulab_kb_rdmsr_start:
    rdmsr
pmulab_kb_rdmsr_end:

/* rdpmc: 1 instruction; ECX = 0 (probed with the fault-safe RDPMC first) */
    .globl pmulab_kb_rdpmc_start
    .globl pmulab_kb_rdpmc_end
pmulab_kb_rdpmc_start:
    rdpmc
pmulab_kb_rdpmc_end:

    .section .note.GNU-stack,"",@progbits
