// Package emu executes the PTX that ptxgen ships, on the CPU, so that CI machines
// without a GPU can test generated kernels: bit for bit where PTX is exact, within
// documented tolerances where it is not, and with precise errors for the bugs a GPU
// would hide (races, missing waits, out-of-bounds and misaligned accesses).
//
// # Use
//
//	mem := emu.NewMemory()
//	a := mem.Alloc("a", aBytes)                  // device address of a copy of aBytes
//	c := mem.Alloc("c", make([]byte, n))
//	err := emu.Run(mod, "gemm", emu.Launch{Grid: [3]int{4, 1, 1}, Block: 128,
//		SharedBytes: 16384, Args: []any{a, c, int64(k)}}, mem)
//	out := mem.Bytes("c")
//
// Load decodes a module once into a Program whose Run can be called many times (and
// concurrently, with distinct Memory values). RunKernel launches a *ptx.Kernel with
// its own grid, block and shared size after checking the arguments against its
// parameter facts, and faults on a store to a buffer that a parameter the kernel does
// not declare Written points at (as it happens, naming the instruction: no copy of the
// buffer is kept to compare after the launch).
// Errors are *Error (runtime) or *DecodeError (unsupported PTX); both name the
// instruction and its line in Module.Print, which is the line in a shipped .ptx file.
//
// # Model
//
// A launch runs its CTAs one at a time, x fastest. A CTA is warps of 32 lanes; a warp
// runs in lockstep with one program counter and an active mask. Control flow must be
// warp-uniform (the generator only emits uniform branches and masks lanes with
// predicates): a branch whose guard differs between active lanes is an error, and
// collectives (mma, ldmatrix, stmatrix, movmatrix, shfl) need all 32 lanes; bar
// needs every live lane of the warp. `@p exit`/`@p ret` may retire some lanes. Warps
// are scheduled round-robin, each running until it blocks at a barrier or exits.
//
// Barriers 0..15 are named barriers as the PTX ISA describes them: a generation
// counts 32 threads per arriving warp (whatever lanes have exited) up to the count
// its first arrival gave (none: every warp of the CTA); bar.arrive does not wait;
// reaching the count releases the waiting warps and starts the next generation.
// Errors name the barrier and the warps: a deadlock (no warp can run while some
// wait), a count differing from the generation's, a warp arriving twice in one
// generation, a count not a multiple of 32 or beyond the CTA, and, unless
// Launch.Warn takes it, a CTA exiting with a barrier partially arrived.
//
// Registers are per-lane uint64 slots, resolved to dense indices at load time;
// immediates, special registers and kernel parameters are slots too. Every
// instruction reads the low bits its type names; f32 values are held as their bits.
// Predicates are per-warp 32-bit masks. Shared memory is a per-CTA window of static
// .shared arrays followed by SharedBytes of dynamic memory, addressed by 32-bit
// offsets (zeroed per CTA); cvta.shared maps it to generic addresses at 1<<48.
// Global memory is the buffers of a Memory, above 4 GiB, 256-byte aligned, with 64
// KiB unmapped gaps between them.
//
// # Checks
//
//   - every access is bounds-checked and must be naturally aligned for its whole
//     size (16 bytes for ld.v4.b32; each ldmatrix/stmatrix row; cp-size for cp.async);
//   - cp.async: each thread has a FIFO of commit groups; the source is read at issue
//     (src-size bytes only: src-size 0 or ignore-src reads and checks nothing), the
//     destination bytes are pending until wait_group/wait_all retires the group, and
//     any access to a pending byte, by any thread, is an error naming the cp.async;
//   - a race checker orders accesses by happens-before through barriers (vector
//     clocks: a warp's clock advances when its lanes synchronize, at every barrier
//     arrival and at bar.warp.sync of all its live lanes; arriving releases, a
//     completing bar.sync acquires every arrival's release). Per shared byte it keeps
//     the last write and each warp's latest reads: a read after another thread's
//     write, or a write after another thread's read or write, not ordered by the
//     barriers between them, is an error naming both threads and the earlier
//     access's instruction (cp.async writes count as the issuing thread's, at
//     retirement); Launch.NoRaceCheck turns it off;
//   - reading a shared byte no thread of the CTA wrote is an error
//     (Launch.AllowUninit turns it off);
//   - a CTA that runs more than Launch.MaxWarpInstrs warp instructions fails;
//   - with Launch.Work, the launches sharing it stop (*WorkError) when their work,
//     in units of about an ALU warp instruction's time (InstrCost), would pass its
//     limit: after a launch's first CTA, when its work times the CTAs would, else
//     where it does.
//
// # Bank conflicts
//
// With Launch.Conflicts set (RunOptions.Conflicts for RunKernelOpts, Case.Conflicts
// in package check), a launch counts the shared-memory wavefronts its ldmatrix
// instructions take, so tests can assert that a shared layout is conflict-free.
// The model: shared memory has 32 banks of 4 bytes, 128 bytes per wavefront.
// ldmatrix .x1/.x2/.x4 reads 1/2/4 8x8 b16 matrices, and for matrix j the lanes
// 8j..8j+7 give the addresses of its 8 rows of 16 bytes; a row lies in 16-byte
// bank group (addr>>4)&7 (4 banks). A matrix takes one wavefront when its rows'
// distinct addresses fall in distinct groups (equal addresses broadcast and count
// once), and in general as many as the largest number of distinct row addresses
// sharing one group. SharedConflicts.Matrices counts the matrices read (the
// conflict-free minimum), SharedConflicts.Wavefronts what they took. Rows padded to
// an odd number of 16-byte units and 128-byte rows whose chunks are XORed by
// (row & 7) are both conflict-free; unswizzled 128-byte rows take 8 wavefronts per
// matrix. stmatrix and ordinary ld/st are not counted.
//
// # Instructions
//
//	integer   add sub (.sat.s32) mul.{lo,hi,wide} mad.{lo,hi,wide} div rem min max neg abs
//	          and or xor not shl shr popc clz brev; prmt.b32 (default mode, .f4e .b4e
//	          .rc8 .ecl .ecr .rc16)
//	          on .s/.u/.b 16, 32, 64 bits; and/or/xor/not/mov .pred
//	float     add sub mul (.rn .ftz .sat) fma.rn mad.rn div.{rn,full,approx} min max
//	          (.NaN .ftz) neg abs copysign ex2 lg2 rcp.{rn,approx} sqrt.{rn,approx} rsqrt
//	          sin cos tanh (.approx .ftz) on .f32; add sub mul fma div min max neg abs
//	          sqrt rcp (.rn) on .f64; mul.rn and fma.rn on .bf16x2 (each half exact,
//	          rounded once, subnormals kept, NaN results the canonical 0x7FFF)
//	compare   setp.{eq,ne,lt,le,gt,ge,lo,ls,hi,hs,equ,neu,ltu,leu,gtu,geu,num,nan}
//	          {.and,.or,.xor}{.ftz} with p or p|q destinations; selp
//	move      mov (registers, immediates, special registers, shared symbols,
//	          pack {a, b} and unpack), cvta{.to}.{global,shared}
//	convert   cvt between integer widths (.sat); int <-> f32/f64 (.rn; .rzi .rni
//	          .rmi .rpi, saturating, NaN -> 0); f32 <-> f64; f32 .rni/.rzi/.rmi/.rpi,
//	          .ftz, .sat; f32 <- bf16/f16 (exact); bf16/f16 <- f32 (.rn .relu
//	          .satfinite); bf16x2/f16x2 <- f32 pair (a -> upper half); e4m3x2 <- f32
//	          pair and <- f16x2 (.rn.satfinite .relu); f16x2 <- e4m3x2 (exact)
//	memory    ld/st .global .shared .param (ld only) and generic, .nc, .v2 .v4,
//	          8- to 64-bit types; cp.async.{ca,cg}.shared.global
//	          (.L2::64B/128B/256B) with src-size or ignore-src; cp.async.commit_group,
//	          wait_group, wait_all; membar/fence (no-ops)
//	warp      ldmatrix/stmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16;
//	          mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32 and
//	          m16n8k32.row.col{.kind::f8f6f4}.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32;
//	          shfl.sync.{up,down,bfly,idx}.b32 (d or d|p);
//	          movmatrix.sync.aligned.m8n8.trans.b16
//	control   bra{.uni}, ret, exit, bar.sync/barrier.sync{.aligned} a{, b},
//	          bar.arrive a, b, bar.warp.sync m; griddepcontrol and
//	          setmaxnreg.{inc,dec} (no-ops); @p/@!p guards on anything
//	special   %tid.* %ntid.* %ctaid.* %nctaid.* %laneid %warpid
//
// Register names are those of the .reg ranges; an index with leading zeros (%x07)
// is the same register (%x7), as ptxas reads it.
//
// This is what the decoder handles; it runs an opcode only where ptx.Forms has its
// form (the generator's, or one marked HandWritten for hand-written PTX), with the
// operand count and destinations the form gives. Anything else, or an unknown
// modifier, is a *DecodeError when the module loads.
//
// # Numerics
//
// Integer ops, f32/f64 add, sub, mul, div, sqrt, rcp with .rn, min/max, setp, selp,
// cvt, shfl, prmt, movmatrix and mul/fma.rn.bf16x2 are bit-exact. fma.rn.f32 rounds
// once: the product is exact in float64 and the sum is rounded to odd (TwoSum), so
// the final rounding to f32 is correct. Integer division by zero gives all ones (remainder: the dividend), as the
// hardware does; PTX leaves it undefined.
//
// Approximate instructions (ex2, lg2, rcp.approx, rsqrt, sqrt.approx, sin, cos,
// tanh, div.approx/full) return the float64 math-library result rounded once to f32:
// the correctly rounded value or 1 ulp from it. Hardware is only within 2 ulp for
// ex2.approx.f32, 1 ulp for rcp.approx.f32, and further for lg2, rsqrt, sin, cos and
// tanh (ptx.md 3.4), so compare results that depend on them with a tolerance.
//
// mma.sync gathers A, B and C into float64, sums each dot product in k order in
// float64 (the products of bf16, f16, e4m3 and e5m2 inputs are exact, and so is the
// sum unless its terms span more than about 2^30 in magnitude), adds C and rounds
// once to f32. Hardware truncates and normalises in blocks (ptx.md 3.10), so mma
// results agree with it to about 1e-6 relative for bf16; compare with a tolerance.
package emu
