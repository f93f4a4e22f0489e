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
 * code and returns with IRETQ; EAX = 2 for a fault-safe instruction, which returns
 * through fixup_return instead (NMIs stay blocked); otherwise the stub jumps to the firmware's handler
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
    cmp $2, %eax
    je 2f
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
2:  lea 32+8*\err(%rsp), %rdx
    jmp fixup_return
    .size pmulab_exc_\vec, .-pmulab_exc_\vec
    .endm

/*
 * The return from a #UD/#GP at a fault-safe instruction (exc_common's case 1) without
 * IRETQ: an IRETQ ends the blocking of NMIs (SDM Vol. 3A §6.7.1 "Handling Multiple NMIs"),
 * even when it returns from a #GP inside the NMI handler, so a fault-safe RDMSR in the PMI
 * handler (PmiHandler::on_nmi) would let a second NMI nest in the first. In: RSP points at
 * the saved RSI, RDX, RCX, RAX; RDX = the exception frame (RIP, CS, RFLAGS, RSP, SS; the
 * error code already skipped). The frame's RIP, RFLAGS and the saved RAX go just below the
 * interrupted RSP, then RSP moves there and POPFQ; RET resumes. CS and SS are the
 * interrupted ones: the fault happened at CPL 0 in pmulab's own code, on this same stack,
 * and the fault-safe functions keep nothing below RSP. The frame is read whole before the
 * three stores, which may overlap its upper words.
 */
fixup_return:
    mov 24(%rdx), %rax       /* the interrupted RSP */
    mov (%rdx), %rcx         /* RIP: the resume point */
    mov 16(%rdx), %rsi       /* RFLAGS */
    mov 24(%rsp), %rdx       /* the saved RAX */
    mov %rcx, -8(%rax)
    mov %rsi, -16(%rax)
    mov %rdx, -24(%rax)
    mov (%rsp), %rsi
    mov 8(%rsp), %rdx
    mov 16(%rsp), %rcx
    lea -24(%rax), %rsp
    pop %rax
    popfq
    ret

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
 *    vector in R8D; EAX = 2: the stub returns through fixup_return, not IRETQ.
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
    mov $2, %eax
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
 * NMI (vector 2). Every NMI on a CPU comes here (pmulab's IDT; fault.cpp), and goes to the
 * first of these that takes it:
 * 1. The PMU's interrupt (run --sample and the other users of pmu/pmi.h): while a
 *    PmiHandler is attached (pmulab_nmi_pmi != 0, MeasurePlatform::pmi_attach on the
 *    measuring CPU), pmulab_nmi_offer(RIP of the NMI frame) calls its on_nmi. Claimed
 *    (EAX = 1): IRETQ, with every register as it was. One pointer serves all CPUs because
 *    one CPU measures at a time and pmulab sends its NMIs only to the CPU that measures
 *    (the watchdog's, selftest's nmi-path); the CPU that sends them and the idle ones
 *    never get one.
 *    Saved around the call: every register the SysV ABI lets C++ clobber (RAX RCX RDX RSI
 *    RDI R8-R11), XMM0-15 and MXCSR (pmulab's EFI code is built with SSE: clang copies
 *    structures such as Status through XMM registers, and the interrupted code may be the
 *    user's vector code), and RFLAGS (IRETQ). The C++ code runs with DF clear (CLD; the
 *    ABI's rule, the interrupted code may have set it) and RSP 16-byte aligned at the call
 *    (the CPU aligned RSP before pushing the 40-byte frame; nine pushes and 272 bytes keep
 *    it). No YMM/ZMM state is touched: the code is not built for AVX, and legacy SSE
 *    instructions leave the upper halves alone. A #GP in the handler (a fault-safe RDMSR)
 *    returns through fixup_return, without IRETQ, so NMIs stay blocked until this stub's
 *    IRETQ (SDM Vol. 3A §6.7.1).
 *    While the BSP's timer watchdog is armed (pmulab_nmi_timer != 0, bsp_watchdog.h: one
 *    CPU, an HPET timer routed as an NMI), pmulab_nmi_offer is called too, with or without
 *    a PmiHandler: it offers the NMI to the handler, then to the timer watchdog, which sets
 *    pmulab_nmi_armed when its time is over (on to 2) and claims its own earlier rounds.
 * 2. pmulab's watchdog (run --timeout, ap_worker.cpp). The CPU that watches a job sets
 *    pmulab_nmi_armed and sends an NMI IPI to the CPU whose job overran. With the flag set,
 *    an NMI whose RIP is inside the running generated code is recorded like a fault
 *    (vector 2) and resumes at the region's exit path (exc_common); one elsewhere (the job
 *    had just left the code) is dropped. Either way the flag is cleared. A claimed PMI
 *    with the flag set also goes this way: NMIs that arrive while NMIs are blocked latch
 *    as one (SDM Vol. 3A §6.7.1), so the watchdog's may have merged into the PMI.
 * 3. NMIs pmulab sent itself: pmulab_nmi_expected counts those not arrived yet (the
 *    watchdog's, fault.cpp watchdog_nmi_arm, and selftest nmi-path's, nmi_probe.cpp). An
 *    unclaimed one takes a count and is dropped (the watchdog's after its work in 2), so
 *    a watchdog NMI that arrives after a PMI already stopped the code is dropped too,
 *    never handed to the firmware. Claimed NMIs take none: a count left over when two
 *    merged only lets one later unknown NMI be dropped.
 * 4. Anything else is not pmulab's: the firmware's handler gets it with the stack as the
 *    CPU left it.
 * NMIs stay blocked until the IRETQ (SDM Vol. 3A "NMI Handling"), so the stub is never
 * entered twice.
 */
    .globl pmulab_nmi
    .type pmulab_nmi, @function
pmulab_nmi:
    cmpq $0, pmulab_nmi_pmi(%rip)
    jne 0f
    cmpq $0, pmulab_nmi_timer(%rip)   /* the BSP's timer watchdog (bsp_watchdog.h): offered too */
    je 2f
0:  push %rax
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %r8
    push %r9
    push %r10
    push %r11
    lea -272(%rsp), %rsp
    movdqa %xmm0, 0(%rsp)
    movdqa %xmm1, 16(%rsp)
    movdqa %xmm2, 32(%rsp)
    movdqa %xmm3, 48(%rsp)
    movdqa %xmm4, 64(%rsp)
    movdqa %xmm5, 80(%rsp)
    movdqa %xmm6, 96(%rsp)
    movdqa %xmm7, 112(%rsp)
    movdqa %xmm8, 128(%rsp)
    movdqa %xmm9, 144(%rsp)
    movdqa %xmm10, 160(%rsp)
    movdqa %xmm11, 176(%rsp)
    movdqa %xmm12, 192(%rsp)
    movdqa %xmm13, 208(%rsp)
    movdqa %xmm14, 224(%rsp)
    movdqa %xmm15, 240(%rsp)
    stmxcsr 256(%rsp)
    cld
    mov 272+72(%rsp), %rdi   /* the interrupted RIP */
    call pmulab_nmi_offer
    ldmxcsr 256(%rsp)
    movdqa 0(%rsp), %xmm0
    movdqa 16(%rsp), %xmm1
    movdqa 32(%rsp), %xmm2
    movdqa 48(%rsp), %xmm3
    movdqa 64(%rsp), %xmm4
    movdqa 80(%rsp), %xmm5
    movdqa 96(%rsp), %xmm6
    movdqa 112(%rsp), %xmm7
    movdqa 128(%rsp), %xmm8
    movdqa 144(%rsp), %xmm9
    movdqa 160(%rsp), %xmm10
    movdqa 176(%rsp), %xmm11
    movdqa 192(%rsp), %xmm12
    movdqa 208(%rsp), %xmm13
    movdqa 224(%rsp), %xmm14
    movdqa 240(%rsp), %xmm15
    test %eax, %eax          /* no flags change from here to the branch */
    lea 272(%rsp), %rsp
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rax
    jz 2f
    cmpq $0, pmulab_nmi_armed(%rip)   /* claimed: a watchdog NMI may have merged into it */
    jne 1f
    iretq
2:  cmpq $0, pmulab_nmi_armed(%rip)
    jne 4f
    cmpq $0, pmulab_nmi_expected(%rip)
    jne 3f
    jmp *pmulab_prev_exc+16(%rip)
3:  lock decq pmulab_nmi_expected(%rip)
    iretq
4:  cmpq $0, pmulab_nmi_expected(%rip)  /* the watchdog's own NMI: its credit */
    je 1f
    lock decq pmulab_nmi_expected(%rip)
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
    .globl pmulab_nmi_pmi
pmulab_nmi_pmi:             /* the attached PmiHandler (fault.cpp), or 0 */
    .quad 0
    .globl pmulab_nmi_expected
pmulab_nmi_expected:        /* NMIs pmulab sent to test the path, not yet taken */
    .quad 0
    .globl pmulab_wake_eoi_mmio
pmulab_wake_eoi_mmio:       /* xAPIC MMIO base, or 0: x2APIC */
    .quad 0

    .section .note.GNU-stack,"",@progbits
