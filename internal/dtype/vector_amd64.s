#include "textflag.h"

// Element-wise a[i] ∘= b[i] over n bytes (n a multiple of 32), 16-byte SSE2
// registers, two per iteration. SSE2 is part of every amd64 CPU Go runs on
// (GOAMD64=v1), so no feature check is needed. Each function has the Go
// signature func(a, b *byte, n int) and leaves a = a ∘ b, a being inout.

#define VLOOP(name, INSN) \
TEXT name(SB), NOSPLIT, $0-24; \
	MOVQ  a+0(FP), DI; \
	MOVQ  b+8(FP), SI; \
	MOVQ  n+16(FP), CX; \
	SHRQ  $5, CX; \
	JZ    done; \
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
