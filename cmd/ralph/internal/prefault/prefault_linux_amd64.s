//go:build !ralph_noprefault

#include "textflag.h"

// func madvise(addr, n, advice uintptr) uintptr
TEXT ·madvise(SB),NOSPLIT,$0-32
	MOVQ	addr+0(FP), DI
	MOVQ	n+8(FP), SI
	MOVQ	advice+16(FP), DX
	MOVQ	$28, AX // SYS_madvise
	SYSCALL
	MOVQ	AX, ret+24(FP)
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
