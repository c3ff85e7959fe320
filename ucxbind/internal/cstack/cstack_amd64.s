#include "textflag.h"

// func Call(fn, arg, stack uintptr) uintptr
//
// Calls the C function fn(arg) with the System V calling convention on the
// C stack whose top is stack, and returns its result. See the package comment for
// when this is allowed. BX holds the goroutine's stack pointer across the
// call: the C convention preserves it.
TEXT ·Call(SB), NOSPLIT|NOFRAME, $0-32
	MOVQ	fn+0(FP), AX
	MOVQ	arg+8(FP), DI
	MOVQ	stack+16(FP), CX
	MOVQ	SP, BX
	ANDQ	$~15, CX
	MOVQ	CX, SP
	CALL	AX
	MOVQ	BX, SP
	MOVQ	AX, ret+24(FP)
	RET
