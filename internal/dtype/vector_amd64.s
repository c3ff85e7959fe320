#include "textflag.h"

// Element-wise a[i] ∘= b[i] over n bytes (n a multiple of 32): 16-byte SSE2
// registers, two per iteration, which every amd64 CPU Go runs on has
// (GOAMD64=v1); and below, the same with one 32-byte AVX2 register, used only
// where the CPU and the OS support it (useAVX2, internal/cpuid). Each
// function has the Go signature func(a, b *byte, n int) and leaves
// a = a ∘ b, a being inout.

// VARGS loads a, b and the number of 32-byte blocks, and returns at
// once when there are none.
#define VARGS \
	MOVQ a+0(FP), DI; \
	MOVQ b+8(FP), SI; \
	MOVQ n+16(FP), CX; \
	SHRQ $5, CX; \
	JZ   done

#define VLOOP(name, INSN) \
TEXT name(SB), NOSPLIT, $0-24; \
	VARGS; \
loop: \
	MOVOU (DI), X0; \
	MOVOU 16(DI), X1; \
	MOVOU (SI), X2; \
	MOVOU 16(SI), X3; \
	INSN  X2, X0; \
	INSN  X3, X1; \
	MOVOU X0, (DI); \
	MOVOU X1, 16(DI); \
	ADDQ  $32, DI; \
	ADDQ  $32, SI; \
	DECQ  CX; \
	JNZ   loop; \
done: \
	RET

VLOOP(·vaddB, PADDB)
VLOOP(·vaddW, PADDW)
VLOOP(·vaddL, PADDL)
VLOOP(·vaddQ, PADDQ)
VLOOP(·vaddPS, ADDPS)
VLOOP(·vaddPD, ADDPD)
VLOOP(·vand, PAND)
VLOOP(·vor, POR)
VLOOP(·vxor, PXOR)

// The same with 32-byte AVX2 registers, one per operand per iteration (n a
// multiple of 32), for CPUs that have AVX2 (useAVX2). VZEROUPPER at the end
// spares the SSE code that follows the AVX-to-SSE transition penalty.
#define VLOOP256(name, INSN) \
TEXT name(SB), NOSPLIT, $0-24; \
	VARGS; \
loop: \
	VMOVDQU (DI), Y0; \
	VMOVDQU (SI), Y1; \
	INSN    Y1, Y0, Y0; \
	VMOVDQU Y0, (DI); \
	ADDQ    $32, DI; \
	ADDQ    $32, SI; \
	DECQ    CX; \
	JNZ     loop; \
	VZEROUPPER; \
done: \
	RET

VLOOP256(·vaddB256, VPADDB)
VLOOP256(·vaddW256, VPADDW)
VLOOP256(·vaddL256, VPADDD)
VLOOP256(·vaddQ256, VPADDQ)
VLOOP256(·vaddPS256, VADDPS)
VLOOP256(·vaddPD256, VADDPD)
VLOOP256(·vand256, VPAND)
VLOOP256(·vor256, VPOR)
VLOOP256(·vxor256, VPXOR)
