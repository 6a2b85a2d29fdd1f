// CFI idioms that a frame-pointer-and-stack-pointer unwinder gets wrong,
// written out by hand; TestEpilogue and TestCFAInRBX map the linked object
// and unwind from inside them.
//
// callee, caller, outer: CFI the way GCC writes it. An epilogue adjusts
// the CFA as it pops, but does not say that the popped registers are back
// in place, so the rules still point below the stack pointer. caller
// addresses its frame through rbp (as a function with alloca does), so
// unwinding past it needs rbp's right value in callee's epilogue.
//
// trampoline, leaf: glibc's lazy-binding trampoline (_dl_runtime_resolve)
// realigns the stack and keeps its CFA in rbx; leaf saves rbx and
// clobbers it, so rbx must be recovered from leaf's frame first.
	.text
	.globl	callee, callee_pop, callee_ret, caller, caller_ret, outer, outer_ret
	.hidden	callee, callee_pop, callee_ret, caller, caller_ret, outer, outer_ret
	.globl	trampoline, trampoline_body, trampoline_ret, leaf, leaf_body
	.hidden	trampoline, trampoline_body, trampoline_ret, leaf, leaf_body

	.type	callee, @function
callee:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	$1, %rbp
callee_pop:
	popq	%rbp
	.cfi_def_cfa_offset 8
callee_ret:
	ret
	.cfi_endproc
	.size	callee, .-callee

	.type	caller, @function
caller:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	subq	$64, %rsp
	call	callee
caller_ret:
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	caller, .-caller

	.type	outer, @function
outer:
	.cfi_startproc
	subq	$8, %rsp
	.cfi_def_cfa_offset 16
	call	caller
outer_ret:
	addq	$8, %rsp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	outer, .-outer

	.type	trampoline, @function
trampoline:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset 16
	.cfi_offset %rbx, -16
	movq	%rsp, %rbx
	.cfi_def_cfa_register %rbx
	andq	$-64, %rsp
	subq	$128, %rsp
trampoline_body:
	call	leaf
trampoline_ret:
	movq	%rbx, %rsp
	.cfi_def_cfa_register %rsp
	popq	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	trampoline, .-trampoline

	.type	leaf, @function
leaf:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset 16
	.cfi_offset %rbx, -16
	movq	$2, %rbx
leaf_body:
	popq	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	leaf, .-leaf

	.section	.note.GNU-stack,"",@progbits
