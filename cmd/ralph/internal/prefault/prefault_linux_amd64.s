//go:build !ralph_noprefault

#include "textflag.h"

// func syscall3(trap, a1, a2, a3 uintptr) uintptr
TEXT ·syscall3(SB),NOSPLIT,$0-40
	MOVQ	a1+8(FP), DI
	MOVQ	a2+16(FP), SI
	MOVQ	a3+24(FP), DX
	MOVQ	trap+0(FP), AX
	SYSCALL
	MOVQ	AX, ret+32(FP)
	RET

// func readOnlyImage() (start, end uintptr)
TEXT ·readOnlyImage(SB),NOSPLIT,$0-16
	MOVQ	$runtime·text(SB), AX
	MOVQ	AX, start+0(FP)
	MOVQ	$runtime·epclntab(SB), AX
	MOVQ	AX, end+8(FP)
	RET

// func dataImage() (start, end uintptr)
TEXT ·dataImage(SB),NOSPLIT,$0-16
	MOVQ	$runtime·noptrdata(SB), AX
	MOVQ	AX, start+0(FP)
	MOVQ	$runtime·edata(SB), AX
	MOVQ	AX, end+8(FP)
	RET
