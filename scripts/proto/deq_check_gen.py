"""deq_check.ptx: the integer e4m3 -> bf16 route of core_gen.py (DEQ=int) on whole words, for time_core.py."""
open("deq_check.ptx", "w").write(""".version 7.8
.target sm_90
.address_size 64
.visible .entry deq(.param .u64 pw, .param .u64 pout, .param .u32 pe)
{
	.reg .b32 %r<20>;
	.reg .b64 %rd<8>;
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ctaid.x;
	mad.lo.u32 %r3, %r2, 128, %r1;
	ld.param.u64 %rd1, [pw];
	ld.param.u64 %rd2, [pout];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
	mul.wide.u32 %rd3, %r3, 4;
	add.u64 %rd4, %rd1, %rd3;
	ld.global.u32 %r4, [%rd4];
	ld.param.u32 %r5, [pe];
	add.u32 %r6, %r5, 120;
	mul.lo.u32 %r7, %r6, 8388736;
	prmt.b32 %r8, %r4, 0, 0x9180;
	shl.b32 %r9, %r8, 4;
	and.b32 %r9, %r9, 0x87f087f0;
	mul.rn.bf16x2 %r10, %r9, %r7;
	prmt.b32 %r11, %r4, 0, 0xb3a2;
	shl.b32 %r12, %r11, 4;
	and.b32 %r12, %r12, 0x87f087f0;
	mul.rn.bf16x2 %r13, %r12, %r7;
	mul.wide.u32 %rd5, %r3, 8;
	add.u64 %rd6, %rd2, %rd5;
	st.global.v2.u32 [%rd6], {%r10, %r13};
	ret;
}
""")
