/*
 * pmulab user-code contract: what machine code measured with
 * `pmulab run --code HEX` (or --code-file, --init, --late-init, --one-time-init)
 * may assume and must respect. C and assembler friendly (only #defines and
 * comments); docs/measure.md "Your own code" explains each item.
 *
 * Registers on entry to the init block (and, unless the code changes them, to
 * late-init and the body; every block sees what the previous one left):
 *   R14  the middle of a physically contiguous scratch area of PMULAB_R14_SIZE
 *        bytes by default (`--r14-size`, up to PMULAB_R14_MAX); the area's start
 *        is the record's "r14" field (a physical address: UEFI maps 1:1)
 *   RDI, RSI, RBP  the middle of their own PMULAB_SCRATCH_SIZE-byte areas
 *   RSP  the middle of a private PMULAB_SCRATCH_SIZE-byte stack
 *   R15  the loop counter when --loop > 1 (set right before the copies: init and
 *        late-init may use it; the body must not change it then)
 *   every other general-purpose register: 0
 * Per run the registers are reloaded: runs do not see each other's values.
 * With --no-mem the start counter values stay in R8, R9, ... (one per read, at most
 * PMULAB_NO_MEM_REGS): the code must not change them, and RAX, RBX, RCX, RDX are
 * clobbered between init and late-init (set them in late-init).
 *
 * The code may clobber every general-purpose, x87, SSE, AVX (and AVX-512 where the
 * CPU has it) register and RFLAGS; pmulab restores the callee-saved registers,
 * RFLAGS, its own stack and the firmware's extended state (XSAVE) afterwards.
 * CR4.OSXSAVE and every XCR0 component CPUID.(0DH,0) reports are enabled while
 * the code runs, so VEX/EVEX instructions do not raise #UD.
 *
 * The code must: keep RSP valid (exceptions are delivered on it), not jump outside
 * its block, not change control registers, the IDT/GDT or interrupt state, and
 * fall through at its end. It runs at ring 0 with interrupts masked.
 *
 * Faults (#DE #DB #BP #OF #BR #UD #NM #TS #NP #SS #GP #PF #MF #AC #XM) are caught:
 * the run stops, an error record names the vector, the block (init, late-init,
 * body, one-time-init) and the offset in it, and pmulab goes on. Code that never
 * ends is stopped after `--timeout` seconds (default PMULAB_TIMEOUT) by an NMI and
 * reported the same way.
 *
 * Pause/resume markers (nanoBench's magic values, 8 bytes each, little-endian, only in
 * the body, alternating from a pause, every copy ending resumed): counting stops at
 * PMULAB_PAUSE_MARKER and restarts at PMULAB_RESUME_MARKER. In GNU as:
 *   .quad PMULAB_PAUSE_MARKER ... .quad PMULAB_RESUME_MARKER
 */
#ifndef PMULAB_USER_CODE_H
#define PMULAB_USER_CODE_H

#define PMULAB_SCRATCH_SIZE 0x100000      /* RDI, RSI, RBP, RSP areas: 1 MiB each */
#define PMULAB_R14_SIZE 0x100000          /* default R14 area (--r14-size) */
#define PMULAB_R14_MAX 0x10000000000     /* largest --r14-size the options take: 1 TiB (the memory map decides) */
#define PMULAB_USER_CODE_MAX 0x10000      /* bytes per block (body, init, ...) */
#define PMULAB_ALIGN 64                   /* the first copy sits at 64k + --align-offset */
#define PMULAB_DRAIN_NOPS 128             /* --drain-frontend: NOPs of 15 bytes each */
#define PMULAB_NO_MEM_REGS 6              /* --no-mem: R8..R13 hold at most 6 counter values */
#define PMULAB_TIMEOUT 10                 /* --timeout default: seconds per job */
#define PMULAB_PAUSE_MARKER 0xF0B513B1C2813F04  /* .quad: stop counting */
#define PMULAB_RESUME_MARKER 0xE0B513B1C2813F04 /* .quad: count again */

#endif /* PMULAB_USER_CODE_H */
