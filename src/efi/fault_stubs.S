/*
 * Fault-safe RDMSR/WRMSR/RDPMC for pmulab (x86-64, SysV ABI, AT&T syntax).
 *
 * Each instruction sits at a known address. The #UD and #GP stubs installed in
 * pmulab's IDT (fault.cpp) compare the faulting RIP against those addresses:
 * on a match they resume after the instruction with the vector in %r8, which
 * the function returns; otherwise they jump to the firmware's original handler
 * with the stack exactly as the CPU left it. No state is shared between CPUs,
 * so the same stubs serve the BSP and every AP.
 */
    .text

/* u32 pmulab_safe_rdmsr(u32 msr, u64 *out): 0 or the exception vector */
    .globl pmulab_safe_rdmsr
    .type pmulab_safe_rdmsr, @function
pmulab_safe_rdmsr:
    mov %edi, %ecx
    xor %r8d, %r8d
.Lrdmsr_insn:
    rdmsr
.Lrdmsr_resume:
    test %r8d, %r8d
    jnz 1f
    shl $32, %rdx
    or %rdx, %rax
    mov %rax, (%rsi)
1:  mov %r8d, %eax
    ret
    .size pmulab_safe_rdmsr, .-pmulab_safe_rdmsr

/* u32 pmulab_safe_wrmsr(u32 msr, u64 value) */
    .globl pmulab_safe_wrmsr
    .type pmulab_safe_wrmsr, @function
pmulab_safe_wrmsr:
    mov %edi, %ecx
    mov %rsi, %rax
    mov %rsi, %rdx
    shr $32, %rdx
    xor %r8d, %r8d
.Lwrmsr_insn:
    wrmsr
.Lwrmsr_resume:
    mov %r8d, %eax
    ret
    .size pmulab_safe_wrmsr, .-pmulab_safe_wrmsr

/* u32 pmulab_safe_rdpmc(u32 index, u64 *out) */
    .globl pmulab_safe_rdpmc
    .type pmulab_safe_rdpmc, @function
pmulab_safe_rdpmc:
    mov %edi, %ecx
    xor %r8d, %r8d
.Lrdpmc_insn:
    rdpmc
.Lrdpmc_resume:
    test %r8d, %r8d
    jnz 1f
    shl $32, %rdx
    or %rdx, %rax
    mov %rax, (%rsi)
1:  mov %r8d, %eax
    ret
    .size pmulab_safe_rdpmc, .-pmulab_safe_rdpmc

/* in: %rax = faulting RIP; out: %rax = resume RIP or 0. Clobbers %rcx. */
fixup_lookup:
    lea .Lrdmsr_insn(%rip), %rcx
    cmp %rcx, %rax
    jne 1f
    lea .Lrdmsr_resume(%rip), %rax
    ret
1:  lea .Lwrmsr_insn(%rip), %rcx
    cmp %rcx, %rax
    jne 2f
    lea .Lwrmsr_resume(%rip), %rax
    ret
2:  lea .Lrdpmc_insn(%rip), %rcx
    cmp %rcx, %rax
    jne 3f
    lea .Lrdpmc_resume(%rip), %rax
    ret
3:  xor %eax, %eax
    ret

/* #UD: no error code. Stack: RIP, CS, RFLAGS, RSP, SS. */
    .globl pmulab_ud_stub
    .type pmulab_ud_stub, @function
pmulab_ud_stub:
    push %rax
    push %rcx
    mov 16(%rsp), %rax
    call fixup_lookup
    test %rax, %rax
    jz 1f
    mov %rax, 16(%rsp)
    mov $6, %r8d
    pop %rcx
    pop %rax
    iretq
1:  pop %rcx
    pop %rax
    jmp *pmulab_prev_ud(%rip)
    .size pmulab_ud_stub, .-pmulab_ud_stub

/* #GP: error code. Stack: ERR, RIP, CS, RFLAGS, RSP, SS. */
    .globl pmulab_gp_stub
    .type pmulab_gp_stub, @function
pmulab_gp_stub:
    push %rax
    push %rcx
    mov 24(%rsp), %rax
    call fixup_lookup
    test %rax, %rax
    jz 1f
    mov %rax, 24(%rsp)
    mov $13, %r8d
    pop %rcx
    pop %rax
    add $8, %rsp
    iretq
1:  pop %rcx
    pop %rax
    jmp *pmulab_prev_gp(%rip)
    .size pmulab_gp_stub, .-pmulab_gp_stub

    .data
    .balign 8
    .globl pmulab_prev_ud
pmulab_prev_ud:
    .quad 0
    .globl pmulab_prev_gp
pmulab_prev_gp:
    .quad 0

    .section .note.GNU-stack,"",@progbits
