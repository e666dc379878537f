package ptx

//go:generate go run ./internal/genforms -o instrs_gen.go

// Forms lists every instruction form the generator may emit, with the operands
// each takes and the target features and oldest PTX ISA version it needs (from the
// PTX ISA's target and version notes), and after them the hand-written forms
// (HandWritten) that only hand-written PTX uses. It is the one place opcode
// knowledge lives: Validate checks instructions against it (refusing hand-written
// forms), the constructors of instrs_gen.go are generated from it (go generate; none
// for hand-written forms), and the emulator decodes exactly its opcodes, taking
// operand counts and which operand a load or store writes from it (emu's
// TestFormsDecode; TestFormsWritten holds its destinations to the = marks).
//
// Op is the full opcode with alternatives in braces: "add.{s32|s64}" stands for
// add.s32 and add.s64, and "{|.nc}" for nothing or ".nc". Args has one entry per
// operand, the kinds it may be: r register, i integer immediate, f float
// immediate, a address, v vector, s symbol (a parameter, a label or a shared
// array); a leading = marks an operand the instruction writes (a destination
// register or vector of them), every other operand is read (an address's base
// register is read even where the instruction writes memory). Source operands of
// arithmetic may be immediates, as PTX allows. The last Optional operands may be
// left out (bar.sync a{, b}). Needs is the set of target features the form needs
// (none: every target ptxgen knows, sm_80 and later, has it; shfl.sync and
// bar.warp.sync need sm_30); MinPTX (major*10+minor) the oldest PTX version, raised
// on particular targets by PTXOn.
var Forms = []Form{
	// Integer and float arithmetic.
	{Op: "{add|sub}.{s32|s64|u32|u64}", Args: "=r ri ri"},
	{Op: "{add|sub|mul}.rn.f32", Args: "=r rf rf"},
	{Op: "mul.{lo|hi}.{s32|u32}", Args: "=r ri ri"},
	{Op: "mul.lo.{s64|u64}", Args: "=r ri ri"},
	{Op: "mad.lo.{s32|u32|s64}", Args: "=r ri ri ri"},
	{Op: "{div|rem}.{s32|s64|u32|u64}", Args: "=r ri ri"},
	{Op: "div.rn.f32", Args: "=r rf rf"},
	// Packed bf16 pairs, each half rounded once (subnormals kept, no flush).
	{Op: "mul.rn.bf16x2", Args: "=r r r", Needs: SM90, MinPTX: 78},
	{Op: "fma.rn.bf16x2", Args: "=r r r r", Needs: SM80, MinPTX: 70},
	{Op: "{min|max}.{s32|s64|u32|u64}", Args: "=r ri ri"},
	{Op: "{min|max}.f32", Args: "=r rf rf"},
	{Op: "neg.{s32|s64}", Args: "=r ri"},
	{Op: "neg.f32", Args: "=r rf"},
	{Op: "{ex2|lg2|rcp|rsqrt}.approx.f32", Args: "=r rf"},
	{Op: "sqrt.rn.f32", Args: "=r rf"},
	// Logic and shifts (a shift amount is 32-bit).
	{Op: "{and|or|xor}.{b16|b32|b64}", Args: "=r ri ri"},
	{Op: "{and|or|xor}.pred", Args: "=r r r"},
	{Op: "not.pred", Args: "=r r"},
	{Op: "shl.{b32|b64}", Args: "=r ri ri"},
	{Op: "shr.{s32|s64|u32|u64}", Args: "=r ri ri"},
	// Byte permute of {b, a}: four selector nibbles, or a mode and c[1:0].
	{Op: "prmt.b32{|.f4e|.b4e|.rc8|.ecl|.ecr|.rc16}", Args: "=r ri ri ri"},
	// Comparison and selection.
	{Op: "setp.{eq|ne|lt|le|gt|ge}.{s32|s64|u32|u64}", Args: "=r ri ri"},
	{Op: "setp.{eq|ne|lt|le|gt|ge}.f32", Args: "=r r rf"},
	{Op: "selp.{b16|b32|b64}", Args: "=r ri ri r"},
	{Op: "selp.f32", Args: "=r rf rf r"},
	// Moves: a register, an immediate, a symbol's address, or two halves packed.
	{Op: "mov.{b16|b32|b64|u32|u64}", Args: "=rv rivs"}, // {lo, hi} packs or unpacks
	{Op: "mov.f32", Args: "=r rf"},
	// Conversions.
	{Op: "cvt.{s64.s32|u64.u32|u32.u64|u16.u32}", Args: "=r r"},
	{Op: "cvt.rn.f32.{s32|s64}", Args: "=r r"},
	{Op: "cvt.rzi.{s32|s64}.f32", Args: "=r r"},
	{Op: "cvt.rn.f16.f32", Args: "=r rf"},
	{Op: "cvt.f32.f16", Args: "=r r"},
	{Op: "cvt.rn.bf16.f32", Args: "=r rf", Needs: SM80, MinPTX: 70},
	{Op: "cvt.rn.bf16x2.f32", Args: "=r r r", Needs: SM80, MinPTX: 70},
	{Op: "cvt.f32.bf16", Args: "=r r", Needs: SM80, MinPTX: 71},
	{Op: "cvt.rn.f16x2.e4m3x2", Args: "=r r", Needs: SM89, MinPTX: 78, PTXOn: map[string]int{"sm_89": 81}},
	{Op: "cvta.to.global.u64", Args: "=r r"},
	// Memory.
	{Op: "ld.param.{u64|s32|s64|f32}", Args: "=r a"},
	{Op: "ld.global{|.nc}.{u8|b16|s32|b32|f32|s64|b64}", Args: "=r a"},
	{Op: "ld.global{|.nc}.{v2|v4}.{b32|f32}", Args: "=v a", Check: vectorWidth(0)},
	{Op: "ld.shared.{u8|b16|s32|b32|f32|s64|b64}", Args: "=r a"},
	{Op: "ld.shared.{v2|v4}.{b16|b32|f32}", Args: "=v a", Check: vectorWidth(0)},
	{Op: "st.global.{u8|b16|s32|b32|f32|s64|b64}", Args: "a ri"},
	{Op: "st.global.{v2|v4}.{b16|b32|f32}", Args: "a v", Check: vectorWidth(1)},
	{Op: "st.shared.{u8|b16|s32|b32|f32|s64|b64}", Args: "a ri"},
	{Op: "st.shared.{v2|v4}.{b16|b32|f32}", Args: "a v", Check: vectorWidth(1)},
	{Op: "cp.async.ca.shared.global", Args: "a a i ri", Needs: SM80, MinPTX: 70, HandWrittenOptional: 1, Check: cpAsyncSize(4, 8, 16)},
	{Op: "cp.async.cg.shared.global", Args: "a a i ri", Needs: SM80, MinPTX: 70, HandWrittenOptional: 1, Check: cpAsyncSize(16)},
	{Op: "cp.async.commit_group", Needs: SM80, MinPTX: 70},
	{Op: "cp.async.wait_group", Args: "i", Needs: SM80, MinPTX: 70},
	// Tensor cores and warp exchange.
	{Op: "ldmatrix.sync.aligned.m8n8.{x1|x2|x4}{|.trans}.shared.b16", Args: "=v a", Needs: SM75, MinPTX: 65, Check: ldmatrixCount},
	{Op: "mma.sync.aligned.m16n8k16.row.col.f32.{bf16.bf16|f16.f16}.f32", Args: "=v v v v", Needs: SM80, MinPTX: 70, Check: vectorLengths(4, 4, 2, 4)},
	{Op: "shfl.sync.bfly.b32", Args: "=r r ri ri ri", MinPTX: 60},
	// Transpose of an 8x8 b16 matrix held in mma fragment layout across the warp.
	{Op: "movmatrix.sync.aligned.m8n8.trans.b16", Args: "=r r", Needs: SM75, MinPTX: 78},
	// Control and synchronization: named barriers 0..15 with an optional thread
	// count (a multiple of 32; bar.arrive needs one), and the warp barrier.
	{Op: "bar.sync", Args: "ri ri", Optional: 1, Check: barrierOperands},
	{Op: "bar.arrive", Args: "ri ri", Check: barrierOperands},
	{Op: "bar.warp.sync", Args: "ri", MinPTX: 60},
	{Op: "bra{|.uni}", Args: "s"},
	{Op: "ret"},
	{Op: "griddepcontrol.{wait|launch_dependents}", Needs: SM90, MinPTX: 78},
	// The warp group's register budget, raised or lowered (producer and consumer
	// warps); architecture-specific code only (sm_90a, sm_120a).
	{Op: "setmaxnreg.{inc|dec}.sync.aligned.u32", Args: "i", Needs: SM90 | ArchSpecific, MinPTX: 80, Check: regCount},

	// Hand-written forms: only hand-written PTX uses them (emu's tests, the
	// prototypes of scripts/proto), so the emulator decodes them, but Validate
	// refuses them in a module and genforms writes no constructor for them. Their
	// Needs and MinPTX are left out: no target check runs on them.
	{Op: "{add|sub}.sat.s32", Args: "=r ri ri", HandWritten: true},
	{Op: "mul.wide.{s32|u32}", Args: "=r ri ri", HandWritten: true},
	{Op: "mul.hi.{s64|u64}", Args: "=r ri ri", HandWritten: true},
	{Op: "mad.{hi|wide}.{s32|u32}", Args: "=r ri ri ri", HandWritten: true},
	{Op: "mad.lo.u64", Args: "=r ri ri ri", HandWritten: true},
	{Op: "abs.{s32|s64}", Args: "=r ri", HandWritten: true},
	{Op: "not.{b16|b32|b64}", Args: "=r ri", HandWritten: true},
	{Op: "{popc|clz|brev}.b32", Args: "=r ri", HandWritten: true},
	{Op: "{add|sub|mul}{|.ftz}{|.sat}.f32", Args: "=r rf rf", HandWritten: true},
	{Op: "{add|sub|mul}.rn{.ftz|.sat|.ftz.sat}.f32", Args: "=r rf rf", HandWritten: true},
	{Op: "{fma|mad}.rn{|.ftz}{|.sat}.f32", Args: "=r rf rf rf", HandWritten: true},
	{Op: "div.{full|approx}.f32", Args: "=r rf rf", HandWritten: true},
	{Op: "{min|max}{.ftz|.NaN|.ftz.NaN}.f32", Args: "=r rf rf", HandWritten: true},
	{Op: "abs{|.ftz}.f32", Args: "=r rf", HandWritten: true},
	{Op: "neg.ftz.f32", Args: "=r rf", HandWritten: true},
	{Op: "copysign.f32", Args: "=r rf rf", HandWritten: true},
	{Op: "{ex2|lg2|rcp|rsqrt|sqrt|sin|cos|tanh}.approx.ftz.f32", Args: "=r rf", HandWritten: true},
	{Op: "{sqrt|sin|cos|tanh}.approx.f32", Args: "=r rf", HandWritten: true},
	{Op: "rcp.rn.f32", Args: "=r rf", HandWritten: true},
	{Op: "{add|sub|mul}{|.rn}.f64", Args: "=r r r", HandWritten: true},
	{Op: "{min|max}.f64", Args: "=r r r", HandWritten: true},
	{Op: "div.rn.f64", Args: "=r r r", HandWritten: true},
	{Op: "fma.rn.f64", Args: "=r r r r", HandWritten: true},
	{Op: "{neg|abs}.f64", Args: "=r r", HandWritten: true},
	{Op: "{sqrt|rcp}.rn.f64", Args: "=r r", HandWritten: true},
	{Op: "setp.{lo|ls|hi|hs}.{u32|u64}", Args: "=r ri ri", HandWritten: true},
	{Op: "setp.{equ|neu|ltu|leu|gtu|geu|num|nan}.f32", Args: "=r r rf", HandWritten: true},
	{Op: "setp.{eq|ne|lt|le|gt|ge}.{and|or|xor}.{s32|u32}", Args: "=r ri ri r", HandWritten: true},
	{Op: "selp.{s32|u32|s64|u64}", Args: "=r ri ri r", HandWritten: true},
	{Op: "cvt.{rni|rmi|rpi}.{s32|u32|s64|u64}.f32", Args: "=r r", HandWritten: true},
	{Op: "cvt.rzi.{u32|u64}.f32", Args: "=r r", HandWritten: true},
	{Op: "cvt.{rni|rzi|rmi|rpi|sat}.f32.f32", Args: "=r r", HandWritten: true},
	{Op: "cvt.rn.f32.{u32|u64}", Args: "=r r", HandWritten: true},
	{Op: "cvt.{s32.s8|s32.s16|u32.u8|u32.u16}", Args: "=r r", HandWritten: true},
	{Op: "cvt.sat.{u8|s8|u16|s16}.{s32|u32}", Args: "=r r", HandWritten: true},
	{Op: "cvt.rn.{relu|satfinite}.{bf16|f16}.f32", Args: "=r rf", HandWritten: true},
	{Op: "cvt.rn.f16x2.f32", Args: "=r r r", HandWritten: true},
	{Op: "cvt.rn.satfinite{|.relu}.e4m3x2.f32", Args: "=r r r", HandWritten: true},
	{Op: "cvt.rn.satfinite{|.relu}.e4m3x2.f16x2", Args: "=r r", HandWritten: true},
	{Op: "cvta{|.to}.shared.u64", Args: "=r r", HandWritten: true},
	{Op: "ld{|.global|.global.nc|.shared}.{u16|s16|u32|u64}", Args: "=r a", HandWritten: true},
	{Op: "ld.{u8|b16|s32|b32|f32|s64|b64}", Args: "=r a", HandWritten: true},
	{Op: "ld.{global|global.nc|shared}.{v2|v4}.u32", Args: "=v a", HandWritten: true},
	{Op: "ld.param.{u32|b32|b64}", Args: "=r a", HandWritten: true},
	{Op: "st{|.global|.shared}.{u16|s16|u32|u64}", Args: "a ri", HandWritten: true},
	{Op: "st.{u8|b16|s32|b32|f32|s64|b64}", Args: "a ri", HandWritten: true},
	{Op: "st.{global|shared}.{v2|v4}.u32", Args: "a v", HandWritten: true},
	{Op: "cp.async.{ca|cg}.shared.global.L2::{64B|128B|256B}", Args: "a a i ri", HandWrittenOptional: 1, HandWritten: true},
	{Op: "cp.async.wait_all", HandWritten: true},
	{Op: "stmatrix.sync.aligned.m8n8.{x1|x2|x4}{|.trans}.shared.b16", Args: "a v", HandWritten: true},
	{Op: "mma.sync.aligned.m16n8k32.row.col{|.kind::f8f6f4}.f32.{e4m3|e5m2}.{e4m3|e5m2}.f32", Args: "=v v v v", HandWritten: true},
	{Op: "shfl.sync.{up|down|idx}.b32", Args: "=r r ri ri ri", HandWritten: true},
	{Op: "barrier.sync{|.aligned}", Args: "ri ri", Optional: 1, HandWritten: true},
	{Op: "barrier.arrive{|.aligned}", Args: "ri ri", HandWritten: true},
	{Op: "exit", HandWritten: true},
	{Op: "membar.{cta|gl|sys}", HandWritten: true},
	{Op: "fence.{sc|acq_rel}.{cta|gpu|sys}", HandWritten: true},
}
