/*
 * Fault-safe RDMSR/WRMSR/RDPMC for pmulab (x86-64, SysV ABI, AT&T syntax).
 *
 * Each instruction sits at a known address. The #UD and #GP stubs installed in
 * pmulab's IDT (fault.cpp) compare the faulting RIP against those addresses:
 * on a match they resume after the instruction with the vector in %r8, which
 * the function returns; otherwise they jump to the firmware's original handler
 * with the stack exactly as the CPU left it. The same stubs also catch faults in
 * generated code (the measured regions, user code included): see exc_common.
 */
    .text

/*
 * u32 pmulab_safe_rdmsr(u32 msr, u64 *out) and u32 pmulab_safe_rdpmc(u32 index, u64 *out):
 * 0 or the exception vector. SAFE_READ insn defines pmulab_safe_<insn>, with the labels
 * .L<insn>_insn and .L<insn>_resume that fixup_lookup compares against.
 */
    .macro SAFE_READ insn
    .globl pmulab_safe_\insn
    .type pmulab_safe_\insn, @function
pmulab_safe_\insn:
    mov %edi, %ecx
    xor %r8d, %r8d
.L\insn\()_insn:
    \insn
.L\insn\()_resume:
    test %r8d, %r8d
    jnz 1f
    shl $32, %rdx
    or %rdx, %rax
    mov %rax, (%rsi)
1:  mov %r8d, %eax
    ret
    .size pmulab_safe_\insn, .-pmulab_safe_\insn
    .endm

    SAFE_READ rdmsr
    SAFE_READ rdpmc

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

/*
 * Exception stubs: one per vector that code can raise (#DE #DB #BP #OF #BR #UD #NM
 * #TS #NP #SS #GP #PF #MF #AC #XM). Each saves RAX, RCX, RDX, RSI and calls
 * exc_common with RSI = vector, RCX = error code (0 without one), RDX = &RIP in the
 * exception frame (RIP, CS, RFLAGS, RSP, SS). exc_common returns EAX = 1 when it
 * handled the exception (the frame's RIP was changed): the stub then drops the error
 * code and returns with IRETQ; otherwise the stub jumps to the firmware's handler
 * with the stack exactly as the CPU left it.
 */
    .macro EXC_STUB vec, err
    .globl pmulab_exc_\vec
    .type pmulab_exc_\vec, @function
pmulab_exc_\vec:
    push %rax
    push %rcx
    push %rdx
    push %rsi
    mov $\vec, %esi
    .if \err
    lea 40(%rsp), %rdx
    mov 32(%rsp), %rcx
    .else
    lea 32(%rsp), %rdx
    xor %ecx, %ecx
    .endif
    call exc_common
    test %eax, %eax
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rax
    jz 1f
    .if \err
    add $8, %rsp
    .endif
    iretq
1:  jmp *pmulab_prev_exc+8*\vec(%rip)
    .size pmulab_exc_\vec, .-pmulab_exc_\vec
    .endm

    EXC_STUB 0, 0
    EXC_STUB 1, 0
    EXC_STUB 3, 0
    EXC_STUB 4, 0
    EXC_STUB 5, 0
    EXC_STUB 6, 0
    EXC_STUB 7, 0
    EXC_STUB 10, 1
    EXC_STUB 11, 1
    EXC_STUB 12, 1
    EXC_STUB 13, 1
    EXC_STUB 14, 1
    EXC_STUB 16, 0
    EXC_STUB 17, 1
    EXC_STUB 19, 0

/*
 * 1. #UD/#GP at one of the fault-safe instructions above: resume after it with the
 *    vector in R8D.
 * 2. Any listed vector with RIP inside the generated code that is running
 *    (pmulab_gen_lo <= RIP < pmulab_gen_hi, set by measure_efi.cpp around the call):
 *    record vector, RIP, error code and CR2 in pmulab_gen_fault and resume at
 *    pmulab_gen_exit = pmulab_gen_abort, which returns from pmulab_gen_call with the
 *    caller's registers, flags and stack as pmulab_gen_call saved them. Only one CPU
 *    runs generated code at a time, so one record serves all.
 */
exc_common:
    cmp $6, %esi
    je 1f
    cmp $13, %esi
    jne 2f
1:  mov (%rdx), %rax
    push %rcx
    call fixup_lookup
    pop %rcx
    test %rax, %rax
    jz 2f
    mov %rax, (%rdx)
    mov %esi, %r8d
    mov $1, %eax
    ret
2:  mov (%rdx), %rax
    cmp pmulab_gen_lo(%rip), %rax
    jb 3f
    cmp pmulab_gen_hi(%rip), %rax
    jae 3f
    mov %rax, pmulab_gen_fault+16(%rip)
    mov %rsi, pmulab_gen_fault+8(%rip)
    mov %rcx, pmulab_gen_fault+24(%rip)
    mov %cr2, %rax
    mov %rax, pmulab_gen_fault+32(%rip)
    movq $1, pmulab_gen_fault(%rip)
    mov pmulab_gen_exit(%rip), %rax
    mov %rax, (%rdx)
    andq $~0x100, 16(%rdx)   /* RFLAGS.TF off: the exit path runs normally */
    mov $1, %eax
    ret
3:  xor %eax, %eax
    ret

/*
 * NMI (vector 2): pmulab's watchdog (run --timeout, ap_worker.cpp). The CPU that
 * watches a job sets pmulab_nmi_armed and sends an NMI IPI to the CPU whose job
 * overran. With the flag set, an NMI whose RIP is inside the running generated code is
 * recorded like a fault (vector 2) and resumes at the region's exit path (exc_common);
 * one elsewhere (the job had just left the code) is dropped. Either way the flag is
 * cleared. Without the flag the NMI is not pmulab's: the firmware's handler gets it
 * with the stack as the CPU left it. NMIs stay blocked until the IRETQ (SDM Vol. 3A
 * "NMI Handling"), so the handler is never entered twice.
 */
    .globl pmulab_nmi
    .type pmulab_nmi, @function
pmulab_nmi:
    cmpq $0, pmulab_nmi_armed(%rip)
    jne 1f
    jmp *pmulab_prev_exc+16(%rip)
1:  push %rax
    push %rcx
    push %rdx
    push %rsi
    mov $2, %esi
    lea 32(%rsp), %rdx
    xor %ecx, %ecx
    call exc_common
    movq $0, pmulab_nmi_armed(%rip)
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rax
    iretq
    .size pmulab_nmi, .-pmulab_nmi

/*
 * void pmulab_gen_call(void (*code)(RegionFrame*), RegionFrame* frame): calls generated
 * code, saving the callee-saved registers, RFLAGS and RSP in pmulab_gen_rsp's frame
 * first. pmulab_gen_abort is the resume point after a fault or a watchdog NMI in the code:
 * it returns from pmulab_gen_call from that saved state alone.
 *
 * It used to be the region's own exit path, which reloads the caller's RSP and then pops
 * RFLAGS and six registers from the caller's stack. An NMI whose RIP is in that exit path
 * after its POPFQ (a window of a few instructions, hit when the watchdog's timeout ends
 * while a run is returning) pushes its frame at the RSP of that moment, just above the
 * popped slots, so it overwrites them; resuming at the exit path again then popped the
 * NMI frame's words into RFLAGS and the callee-saved registers (and an NMI in the
 * prologue, before the region saved RSP, loaded a stale one). The slots saved here lie
 * above every RSP the code uses, so no exception frame pushed in the code reaches them.
 */
    .globl pmulab_gen_call
    .type pmulab_gen_call, @function
pmulab_gen_call:
    push %rbx
    push %rbp
    push %r12
    push %r13
    push %r14
    push %r15
    pushfq
    mov %rsp, pmulab_gen_rsp(%rip)
    mov %rdi, %rax
    mov %rsi, %rdi
    call *%rax
    jmp 1f
    .globl pmulab_gen_abort
pmulab_gen_abort:
    mov pmulab_gen_rsp(%rip), %rsp
1:  popfq
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %rbp
    pop %rbx
    ret
    .size pmulab_gen_call, .-pmulab_gen_call

/*
 * The wake IPI of pmulab's AP workers (ap_mailbox.h; vector kApWakeVector, in the AP
 * exception table only). A halted worker only needs to leave HLT: the stub signals
 * end of interrupt to the local APIC (SDM Vol. 3A "Signaling Interrupt Servicing
 * Completion": a write of 0 to the EOI register, MMIO offset 0xB0, or MSR 0x80B in
 * x2APIC mode) and returns.
 */
    .globl pmulab_ap_wake
    .type pmulab_ap_wake, @function
pmulab_ap_wake:
    push %rax
    push %rcx
    push %rdx
    mov pmulab_wake_eoi_mmio(%rip), %rax
    test %rax, %rax
    jz 1f
    movl $0, 0xB0(%rax)
    jmp 2f
1:  mov $0x80B, %ecx
    xor %eax, %eax
    xor %edx, %edx
    wrmsr
2:  pop %rdx
    pop %rcx
    pop %rax
    iretq
    .size pmulab_ap_wake, .-pmulab_ap_wake

    .data
    .balign 8
    .globl pmulab_prev_exc
pmulab_prev_exc:            /* the firmware's handler of each vector 0..31 */
    .fill 32, 8, 0
    .globl pmulab_gen_lo
pmulab_gen_lo:
    .quad 0
    .globl pmulab_gen_hi
pmulab_gen_hi:
    .quad 0
    .globl pmulab_gen_exit
pmulab_gen_exit:
    .quad 0
    .globl pmulab_gen_rsp
pmulab_gen_rsp:             /* RSP in pmulab_gen_call after its saves */
    .quad 0
    .globl pmulab_gen_fault
pmulab_gen_fault:           /* faulted, vector, RIP, error code, CR2 */
    .fill 5, 8, 0
    .globl pmulab_nmi_armed
pmulab_nmi_armed:           /* 1: the next NMI is pmulab's watchdog */
    .quad 0
    .globl pmulab_wake_eoi_mmio
pmulab_wake_eoi_mmio:       /* xAPIC MMIO base, or 0: x2APIC */
    .quad 0

    .section .note.GNU-stack,"",@progbits
