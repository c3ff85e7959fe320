//go:build !race

#include "textflag.h"

// func repMovsb(dst, src unsafe.Pointer, n uintptr)
TEXT ·repMovsb(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	REP; MOVSB
	RET

// func cpuidERMS() bool
TEXT ·cpuidERMS(SB), NOSPLIT, $0-1
	MOVL $0, AX
	CPUID
	CMPL AX, $7
	JB   none
	MOVL $7, AX
	MOVL $0, CX
	CPUID
	SHRL $9, BX
	ANDL $1, BX
	MOVB BX, ret+0(FP)
	RET
none:
	MOVB $0, ret+0(FP)
	RET
