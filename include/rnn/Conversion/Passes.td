//===- Passes.td - Lowerings out of the rnn dialect --------*- tablegen -*-===//

#ifndef RNN_CONVERSION_PASSES_TD
#define RNN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertRNNToLinalg : Pass<"convert-rnn-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lowers scans, steps and cell ops to loops and linalg on tensors";
  let description = [{
    Every `rnn.scan` becomes an `scf.for` over the time axis whose body is
    the cell, inlined; every `rnn.step` becomes the inlined cell. Sequence
    lengths become per-row selects (a finished row keeps its state and
    outputs zeros); `reverse` walks the time axis backwards. Then every op of
    the dialect becomes tensor-level code: pointwise ops and fused
    `rnn.pointwise` groups become `linalg.generic` (a group with row
    reductions becomes one generic per phase between its reductions),
    reductions become reducing `linalg.generic`, splits and concatenations
    become `tensor` slices, and `rnn.matmul` becomes a contraction over the
    rows, a `linalg.generic` marked `rnn.gemm_weight_layout` (the library
    GEMM lowering later turns it into a BLAS or cuBLAS call; left alone it
    lowers to loops). An `rnn.cast` of the result of an elementwise generic
    that nothing else reads (a backward's previous states, rounded for a
    16-bit weight gradient) becomes that generic yielding the cast: one
    kernel writes the narrow type. The cells are erased.

    The result is prepared for in-place bufferization: a state that the
    cell also outputs lives in its output sequence (one extra row holds the
    initial state; each step reads the row the previous step wrote), other
    states are computed into their loop-carried tensor, and function tensor
    arguments are marked `bufferization.writable = false` (they belong to
    the caller).

    Head-wise products (`rnn.headwise_matmul`, `rnn.headwise_outer_sum`)
    become one `linalg.generic` contraction each, on views with heads and
    gates dimensions of their own, marked `rnn.headwise_gemm` with its form
    (forward, transposed, outer sum): the library GEMM lowering makes each
    one strided-batched call per gate, the heads as the batch; left alone
    it lowers to loops.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def SplitSharedFills : Pass<"split-shared-fills", "::mlir::ModuleOp"> {
  let summary = "Gives every op that writes into a shared linalg.fill a fill "
                "of its own";
  let description = [{
    CSE merges identical fills (the zero inits of two products of one shape,
    such as a backward's two weight gradients when I = H); One-Shot
    Bufferize then gives the second writer a copy of the first's filled
    buffer, and neither product has its fill right before it, which the
    library-GEMM conversion needs to overwrite instead of accumulating.
    Run after CSE and before bufferization: each op that takes the fill's
    result as a destination-style init gets its own clone of the fill (and
    of the `tensor.empty` it fills), placed right before it; the original
    stays only where something else reads it.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numSplit", "fills-split", "Fills cloned for a writer of their own">
  ];
}

def ConvertMatmulToLibraryGemm
    : Pass<"convert-matmul-to-library-gemm", "::mlir::ModuleOp"> {
  let summary = "Turns matmul contractions on memrefs into library GEMM calls";
  let description = [{
    The one place where matmuls meet a GEMM library. Each contraction that
    convert-rnn-to-linalg made of an `rnn.matmul` (a `linalg.generic` marked
    `rnn.gemm_weight_layout`), once on memrefs whose rows form one matrix
    (unit inner stride; packed leading dimensions), becomes a call

    ```
    func.call @<function>(ab_dtype, c_dtype, b_layout, m, n, k,
                          a, lda, b, ldb, c, ldc)
    ```

    with addresses and leading dimensions read from the memrefs'
    metadata: `b_layout` is 0 for a weight stored `[N, K]` (PyTorch's
    layout, `C = A·Bᵀ`) and 1 for `[K, N]`, plus 2 when the matmul allowed
    TF32 and `tf32-flag` is set (the cuBLAS entry point reads it; the CPU one
    takes the layout alone), plus 4 (accumulate: `C += A·op(B)`) unless a
    zero fill of C right before the contraction makes it dead (it is then
    erased and the call overwrites C), plus 8 when `constant-b-flag` is set
    and B is a view of an argument of a function that nothing in the module
    calls and that nothing in the function writes (a weight: its contents stay the same for the whole call, so the
    CUDA runtime may convert it once per call and reuse the result at every
    step), plus 16 when `per-step-flag` is set and the contraction is inside
    a loop (it runs once per step: the CUDA runtime's graph tuning tries
    other cuBLASLt algorithms for these products); dtypes use the runtime's
    `rnn_dtype` codes. The
    CPU backend names `rnn_cpu_gemm` (OpenBLAS) in `librnn_runtime`; a GPU
    backend names its cuBLAS entry point. When the type cannot tell that the
    leading dimensions of A or C are packed (a slice of a sequence whose
    batch is dynamic), the call runs under an `scf.if` that checks the
    strides at run time, with the contraction as the fallback.

    With `k-partials` set, a recurrent product whose result feeds one
    elementwise kernel first splits K instead: a contraction in a loop
    body with a dead zero fill, a `[N, K]` weight with K >= 1024 and
    N <= 2048 (static), a fresh `[M, N]` result (an allocation outside the
    contraction's block, freed there too) that the next op touching memory
    reads through identity maps, itself or through 2-D windows that only it
    reads (the gates of concatenated matmuls), an all-parallel
    `linalg.generic`, and that nothing reads later (the consumer overwrites
    it, or the next use is a fill). It becomes

    ```
    func.call @<partials-function>(ab_dtype, c_dtype, b_layout, slices, m, n,
                                   k, a, lda, b, ldb, p, ldp)
    ```

    writing `slices` partial products over consecutive K slices into a
    `[slices, M, N]` buffer, and the consumer adds them up (the same window
    of each) as it reads them:
    one launch less per product (cuBLAS's split-K adds its own reduction
    kernel), and the consumer can launch early behind it. `slices` is
    `k-partials`, or half of it (at least 2) for N > 1024 with 16-bit
    operands (cuBLAS runs those; the CUDA runtime's own kernel runs f32
    partials of up to 64 rows at any N; for more rows cuBLAS runs the f32
    ones too, where 4 slices at N = 2048 were about 3% faster on the H100).
    The partials cost `slices * M * N` elements of traffic, so they are used
    only for 16 <= M and a buffer of at most 16 MiB: an `scf.if` on M keeps
    the plain GEMM and consumer for other batches (the buffer is allocated
    empty then).

    The same split applies across a loop's back edge (a backward's
    recurrent gradient `dG · U`, whose reader is the next step's adjoint
    kernel): a product of a `[N, K]` or `[K, N]` weight that ends a loop
    body, with its dead zero fill, into a buffer defined outside the loop
    that one all-parallel `linalg.generic` earlier in the body reads through
    identity maps (and does not write), with no other use in the loop (no
    view of the buffer, no value of the same buffer, no loop argument), and
    no other product split for the same reader. The partials buffer is
    made before the loop, its first slice a copy of the
    buffer (what the first step reads) and the others zeros; the reader sums
    the slices and the call writes them, each under the `scf.if` on M (here
    for partials of at most 2 MiB a step); after the loop the sum goes back
    into the buffer. Where the product adds onto the buffer instead (no
    fill) and the reader overwrites all of it without reading what it
    overwrites (a GRU's direct path `dh·z`, then `+ dG·U`), the partials
    start as zeros, the reader reads the buffer plus the slices, and the
    slices are added to the buffer after the loop.

    With `batched-function` set, each head-wise product that
    convert-rnn-to-linalg left as one generic (marked `rnn.headwise_gemm`)
    becomes one call per gate G

    ```
    func.call @<batched-function>(ab_dtype, c_dtype, b_layout, batch, m, n, k,
                                  a, lda, stride_a, b, ldb, stride_b,
                                  c, ldc, stride_c)
    ```

    with the NH heads as the batch (a head's operands `stride_*` elements
    apart): the forward product `x_h · R[h, g]ᵀ` into gate g's columns, the
    transposed one `d_{g,h} · R[h, g]` added up over the gates (gate 0
    overwrites where a dead zero fill allows), and the outer sum
    `d_{g,h}ᵀ · x_h` over all rows (`b_layout` bit 5, 32: A is stored
    `k x m`). Leading dimensions that the type cannot show to be packed
    are checked at run time, the generic kept as the fallback.

    A product whose f32 buffer is only read by an elementwise
    `arith.truncf` into another buffer (the bf16 input gradient of a bf16
    model's backward) is stored rounded by the call itself (`c_dtype` the
    narrow type; the GEMM still accumulates in f32 and rounds once), and
    the rounding kernel and the f32 buffer go.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"rnn_cpu_gemm\"",
           "The GEMM entry point to call">,
    Option<"kPartials", "k-partials", "unsigned", "0",
           "Split qualifying recurrent products into this many K slices "
           "added by their consumer (0: never)">,
    Option<"partialsFunction", "partials-function", "std::string",
           "\"rnn_cuda_gemm_partials\"",
           "The entry point that writes K-slice partial products">,
    Option<"batchedFunction", "batched-function", "std::string", "\"\"",
           "The strided-batched GEMM entry point that runs head-wise "
           "products, one call per gate (empty: they stay loops)">,
    Option<"tf32Flag", "tf32-flag", "bool", "false",
           "Add 2 to b_layout for matmuls that allow TF32">,
    Option<"constantBFlag", "constant-b-flag", "bool", "false",
           "Add 8 to b_layout when B is a function argument never written">,
    Option<"perStepFlag", "per-step-flag", "bool", "false",
           "Add 16 to b_layout for contractions inside a loop">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect"
  ];
  let statistics = [
    Statistic<"numCalls", "gemm-calls", "Contractions turned into calls">,
    Statistic<"numBatched", "gemm-batched",
              "Head-wise products turned into strided-batched calls">,
    Statistic<"numPartials", "gemm-partials",
              "Products split into K-slice partials for their consumer">,
    Statistic<"numRoundedStores", "gemm-rounded-stores",
              "Products stored rounded by the call instead of a cast kernel">
  ];
}

def ElideBufferCopies : Pass<"elide-buffer-copies", "::mlir::ModuleOp"> {
  let summary = "Reads a buffer directly instead of a copy of it";
  let description = [{
    After bufferization, before deallocation: a `memref.copy` into a fresh
    `memref.alloc` whose every later use (in the same block) only reads it
    is removed and the readers read the source, provided nothing from the
    copy to the last read may write the source. Writes are known from
    memory effects (a call or an op without them keeps the copy); two
    buffers overlap unless their roots differ and one of them is allocated
    here, or they are subviews of one buffer that value-bounds analysis
    proves disjoint (row t and row t + 1 of a sequence). This removes the
    per-step copy of a state read while its successor is written into the
    next row, and the copies of results into temporaries before they are
    copied into the caller's buffers.

    The other way round, a `memref.copy` whose source is a fresh
    `memref.alloc` (or the one subview of one) that nothing uses after the
    copy is removed, and the ops before it in the same block that compute
    or read the source use the copy's target instead (its view ops move up
    to the first of them), provided nothing else reads or writes memory
    that may overlap the target from there to the copy. The pieces of a
    fused group's wide result are then computed in their columns of the
    wide buffer (bufferization places only one piece of a kernel there),
    and a cell output's pieces straight into their row of the output
    sequence.

    Where a buffer is an iteration argument or result of `scf.for`, the
    buffers that enter the loop and that it yields count as its roots.
    With `distinct-arguments`, buffers of two different function arguments
    are taken not to overlap (rnn-compile's models: the runtime refuses
    results that share memory with an argument or another result, and
    arguments are never written); otherwise any two non-allocated buffers
    may.
  }];
  let options = [
    Option<"distinctArguments", "distinct-arguments", "bool", "false",
           "Buffers of different function arguments do not overlap">
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def ComputeResultsInPlace
    : Pass<"compute-results-in-place", "::mlir::ModuleOp"> {
  let summary = "Computes a result in the caller's buffer instead of copying "
                "it there at the end";
  let description = [{
    After `buffer-results-to-out-params`: a function that ends by copying a
    buffer it allocated (`memref.alloc` in its entry block) into one of its
    arguments, where that argument has no other use and the buffer no use
    after the copy, uses the argument in place of the buffer from the
    start; the allocation and the copy go away. The output sequence of a
    scan is then written row by row straight into the caller's output, and
    a final state lives in the caller's buffer from the start.

    This relies on the C ABI's contract (docs/runtime.md): a result buffer
    has the result's shape (the runtime checks it before the call, so a
    buffer of dynamic shape qualifies) and does not overlap the arguments.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def HoistLoopAllocations
    : Pass<"hoist-loop-allocations", "::mlir::ModuleOp"> {
  let summary = "Allocates a loop's per-iteration scratch buffers once";
  let description = [{
    After deallocation: a `memref.alloc` in an `scf.for` body whose sizes are
    defined outside the loop, whose only `memref.dealloc` is in the same
    body, and which (with its views) is not yielded lives within one
    iteration; it moves before the loop and its dealloc after it, so all
    iterations share one buffer. Inner loops first, so buffers climb through
    a nest. On the GPU this turns T stream-ordered allocations and frees
    (graph nodes once captured) into one.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def ConvertLanesToRuntimeCalls
    : Pass<"convert-lanes-to-runtime-calls", "::mlir::ModuleOp"> {
  let summary = "Issues each lane of a layer wavefront on a stream of its own";
  let description = [{
    After bufferization: each `scf.execute_region` that calls
    `rnn_cuda_lane_begin(lane, after)` (constants; `rnn-layer-wavefront`
    marks its lanes so) is inlined between that call, moved to its start,
    and `rnn_cuda_lane_end(lane)` at its end (and so is an
    `scf.execute_region` that holds a group of lanes), and
    the loop that holds them is followed by `rnn_cuda_lanes_join()`, before
    anything that frees what the lanes used: the runtime issues the lane's
    work on a stream of its own that waits for lane `after`
    (`include/rnn/Runtime/rnn_cuda_runtime.h`).

    The lanes run at once only where nothing else in the loop touches
    memory, and where lanes that wait for no other (a group side by side)
    share no buffer that one of them writes: a loop whose body holds
    anything but the lanes, views and scalar arithmetic (a copy
    bufferization left between them), or a group whose lanes bufferization
    gave one buffer, keeps its lanes in order, inlined without the calls,
    as with `streams=false` (the CPU backend), where the marks are
    dropped.
  }];
  let options = [
    Option<"streams", "streams", "bool", "true",
           "Issue the lanes through the CUDA runtime (false: inline them in "
           "order)">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numConcurrent", "concurrent-loops",
              "Loops whose lanes run on streams of their own">,
    Statistic<"numInOrder", "in-order-loops",
              "Loops whose lanes run in order">
  ];
}

def OutlineLoops : Pass<"outline-loops", "::mlir::ModuleOp"> {
  let summary = "Moves each large top-level loop of a function into a "
                "function of its own, shared by identical loops";
  let description = [{
    After bufferization and deallocation: in a `func.func` that holds at
    least two `scf.for` loops of at least `min-ops` nested ops directly in
    its body (the time loops of a stack of scans: 2·L in an L-layer
    bidirectional network), each such loop moves into a private
    `func.func` named after its function (`@forward_loop`,
    `@forward_loop_0`, ...; internal linkage once in LLVM) and is replaced
    by a `func.call` marked `no_inline`. Constants the loop uses are cloned into the new function,
    and so are the buffers that only the loop uses (allocated before it
    and freed after it in the same block: the scratch buffers that
    `hoist-loop-allocations` took out of it), with their deallocs; every
    other value from above (buffers, sizes, scalars) is an argument, and
    the loop's results are the function's. A loop that uses a value of
    another type (a GPU token) stays where it is. Identical functions (the
    same text under one name) are then one: the time loops of layers 1 to
    L-1 of a stack run the same cell on buffers of the same types, and so
    (the input projection being outside the loop) does layer 0's.

    LLVM's optimiser and code generator take time that grows faster than
    the size of a function (dominator-tree updates, live ranges that cross
    every loop); a function per loop keeps the compile time linear in the
    number of layers, and sharing them compiles each distinct loop once
    (docs/performance-notes.md). A call per loop, not per step, costs
    nothing measurable.
  }];
  let options = [
    Option<"minOps", "min-ops", "unsigned", "32",
           "the nested ops a loop must hold to be outlined">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def ConvertStepLoopsToPersistentKernels
    : Pass<"convert-step-loops-to-persistent-kernels", "::mlir::ModuleOp"> {
  let summary = "Runs an eligible recurrence as one persistent kernel, the "
                "per-step loop as its fallback";
  let description = [{
    For the CUDA backend on sm_90 and later, after bufferization and before
    the GEMMs and kernels are mapped: a time loop whose step is one bf16 or
    f16 recurrent matmul `S x U^T` (S the [B, H] state the step rewrites, U a
    [G*H, H] weight from outside the loop, G = 1 to 4 gates) and one
    pointwise group that reads the product at column offsets q*H and writes
    S (every gated cell the fusion produces), becomes one `gpu.launch` for
    the whole sequence: H / 16 blocks in clusters of 2, each holding its 16
    units' rows of U on chip, a grid-wide barrier per step, the cell's
    pointwise step (the group's body, cloned) on the block's units, its f32
    exp, division and tanh on the GPU's approximate instructions (errors
    below the 16-bit rounding of the state the product reads). S is
    double-buffered in a scratch buffer (rows the library's padded row
    apart, so that a block stages a batch tile in one bulk copy) and copied
    back after the kernel when it is read later.

    A step of dependent stages (products and groups in turn, stage s's
    group writing the vector stage s + 1 multiplies, the last the state:
    the MGU, the GRU with the reset gate first; matchStagedRecurrence) of
    2 to 4 gates in all runs the same way: the blocks hold every stage's
    rows (the stages' weights copied into one [G*H, H] weight before the
    launch, an `x W` weight transposed), and a step is one exchange of the
    staged vector per stage, each multiplying the stage's tiles only.

    The batch runs in tiles, each on its own copy of the blocks (the
    launch's y dimension, its own step counter and rows of the staged
    buffers; the tiles never wait for each other): as many tiles as the
    GPU holds copies of the grid (`rnn_cuda_persistent_batch_tiles`, the
    runtime's count of SMs over the blocks), or one per 8 rows where the
    batch has fewer, the rows evened out in multiples of 8. A batch whose
    tiles would need more rows than the layout stages (32, fewer where the
    staged vector is wide) runs the fallback.

    A derived backward's step loop (`rnn-differentiate`: one adjoint group
    that reads the state gradient S and writes the G gate windows of P
    [B, G*H], then the transposed product `S = P x U`, over a zero fill of S
    or accumulating onto what the group wrote into it) becomes the same
    kind of launch: each block owns 16 units of S and their columns of U,
    runs the group for them (S from the library's sums after the first
    step), writes each gate gradient also into half t % 2 of a
    [2, B, G*H] buffer of P's type (rows padded by 8), and the library's
    product of its tile's rows of that half gives the next step's S; after
    the last step S is stored.

    The data movement and the products come from the device library
    (lib/DeviceLibrary), which `gpu-module-to-binary` links; the kernels
    call its entry points (`rnn_persistent_{fwd,bwd}[_f16]_g<G>_h<H>_*`), which
    exist for H a multiple of 64 from 512 to 2048 where the layout fits
    the registers and shared memory of an SM; another H from 449 runs on
    those of the next multiple of 64, its padding units skipped and its
    staged buffers zeroed
    (include/rnn/DeviceLibrary/PersistentRecurrence.h). A loop in the
    fallback branch of a block kernel (convert-step-loops-to-block-kernels)
    qualifies too: the grid-wide kernel then takes the batches the block
    kernels leave. The loop stays, in an `scf.if`, and runs instead when the
    batch's tiles would be above the layout's rows, when the sequence has
    fewer than 32 steps (the kernel's set-up would not pay), or when the
    runtime refuses the
    launch because the device cannot hold all blocks at once
    (`rnn_cuda_require_resident_next_launch`,
    `rnn_cuda_take_refused_launch`). Loops of any other form, and layouts
    without entry points, are left alone.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def ConvertStepLoopsToBlockKernels
    : Pass<"convert-step-loops-to-block-kernels", "::mlir::ModuleOp"> {
  let summary = "Runs a recurrence small enough for one thread block per "
                "(head, batch row) as one kernel, the step loop as fallback";
  let description = [{
    For the CUDA backend, after bufferization and before the GEMMs and
    kernels are mapped: a time loop of the form the persistent kernels run
    (one recurrent product of the state S with a weight from outside the
    loop, dense `S x U^T` with U [G*H, H] or head-wise with NH heads of
    N units, in f32, bf16 or f16; one pointwise group over [B, H] that reads
    the product through its gate windows and writes S) becomes one
    `gpu.launch` for the whole sequence when a head's weights fit in one
    block's shared memory: NH * B blocks of N threads (whole warps), each
    holding its head's [G*N, N] matrix and its row's h_{t-1} in shared
    memory, one barrier a step, the cell's pointwise body (cloned from the
    group) per element. A dense recurrence is the one-head case. The blocks
    never wait for each other.

    A derived backward's step loop in the other order (one pointwise group
    that reads the state gradient S and writes the G gate windows of the
    step's gradients P [B, G*H], then the transposed product S = P x U,
    dense U [G*H, H] or head-wise) becomes the same kind of kernel: per step
    the group, the gate gradients staged in shared memory, one barrier, then
    each unit's sum over its head's G*N gradients; S is stored after the
    last step.

    With `max-cluster-size` above 1 (sm_90), a head whose weights fit in no
    block is shared by a cluster of 2 to 16 blocks (above 8 the launch
    allows a non-portable cluster size, which the H100 and H200 run), each
    holding a slice of
    its units and a whole copy of the staged vector: a unit's new state
    (the backward: its gate gradients) is stored into every block of the
    cluster with `st.async` (distributed shared memory), whose bytes
    complete the target block's mbarrier of that half of the vector, and
    each block waits on its own mbarrier instead of a barrier. The plans
    are those of the smallest cluster whose blocks hold their weights, and
    for the batches those take, those of every larger cluster too, by the
    cost model's step (smaller blocks give a unit more lanes and pack more
    gates into a word).

    A cost model gives each recurrence the largest batch for which the
    kernel is expected to beat the step loop (the kernel's shared-memory
    loads a step against the step loop's launches); the loop stays, in an
    `scf.if`, and runs for larger batches, empty sequences, and when
    `rnn_cuda_persistent_enabled()` (the runtime) returns 0. Loops of any
    other form, and heads whose matrices do not fit in `max-shared-bytes`,
    are left alone. The launch carries `rnn.persistent_launch`.

    With `grid-kernels` (set where convert-step-loops-to-persistent-kernels
    runs next), a loop that the device library's grid-wide kernel can run
    gets no cluster plans: on the H100 the grid-wide kernel was the faster
    at every batch measured where both applied (bf16 LSTM and GRU at
    H = 512, docs/persistent-recurrences.md).
  }];
  let options = [
    Option<"maxSharedBytes", "max-shared-bytes", "int64_t",
           /*default=*/"232448",
           "Dynamic shared memory one block may use (227 KiB: sm_90)">,
    Option<"maxClusterSize", "max-cluster-size", "int64_t",
           /*default=*/"1",
           "Most blocks of a cluster a head may be spread over, a power of two "
           "from 1 to 16 (16 on sm_90, 1 where there are no clusters)">,
    Option<"gridKernels", "grid-kernels", "bool", /*default=*/"false",
           "The grid-wide kernels run next: no cluster plans for the loops "
           "they can run">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect"
  ];
}

def ConvertBuffersToGPU : Pass<"convert-buffers-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Puts a lowered model's buffers in device memory";
  let description = [{
    For the CUDA backend, after bufferization: every `memref.alloc` and
    `memref.dealloc` of model data in host code becomes `gpu.alloc` /
    `gpu.dealloc` (stream-ordered device memory), and every `memref.copy`
    becomes a `linalg.copy`, which the kernel mapping then turns into a copy
    kernel. The host never touches the data: it only launches kernels and
    GEMMs and computes buffer metadata. The deallocation bookkeeping (small
    buffers of `index` addresses and `i1` ownership flags that host code
    reads) stays in host memory. A constant (splat) global whose address
    host code hands to a library call (a GEMM operand) becomes a device
    buffer filled with its value; kernels read constant globals through
    their own copy (`sink-views-into-kernels`).
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::arith::ArithDialect"];
}

def ConvertRowGroupsToKernels
    : Pass<"convert-row-groups-to-kernels", "::mlir::ModuleOp"> {
  let summary = "Runs each fused group with row reductions as one kernel";
  let description = [{
    For the CUDA backend, before the other kernel mappings: the linalg ops
    that `convert-rnn-to-linalg` made of one `rnn.pointwise` group with row
    reductions (marked `rnn.row_group`: a generic per phase, a reducing
    generic per `rnn.row_sum` / `rnn.row_max`) become one `gpu.launch` with
    a block per row. Thread t takes columns t, t + blockDim, ... of every
    phase; a run of reductions is one pass over the row (a partial per
    reduction), butterfly shuffles within each warp, one round through
    shared memory and one barrier, after which every thread holds the row's
    results in registers, so later phases read no reduction buffers. The
    fills and copies that initialise the group's per-row buffers, and the
    pure index computations between its ops, are absorbed; deallocations
    move after the kernel. A barrier is placed between two phases only
    where a thread may read or overwrite an element another thread wrote
    (or read) since the last barrier. A group with anything else between
    its ops is left to `convert-row-reductions-to-kernels` and the loop
    mapping. `block-size` caps the threads per block; narrower rows get
    fewer (whole warps).

    Where a row's columns are unrolled (a known length), a thread keeps
    what it stored for its columns in registers for later phases, and
    stores into the group's own temporaries that nothing reads any more are
    dropped. Loads from buffers that the kernel does not write (weights,
    biases, the GEMM's output) are issued at the start of the kernel, so
    that they travel while the first reductions run. With
    `distinct-arguments`, buffers of two different function arguments are
    taken not to overlap (rnn-compile's models: the runtime refuses results
    that share memory with an argument or another result, and arguments
    are never written); otherwise any two non-allocated buffers may.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "256",
           "Most threads per block (a multiple of 32)">,
    Option<"distinctArguments", "distinct-arguments", "bool", "false",
           "Buffers of different function arguments do not overlap">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def ConvertRowReductionsToKernels
    : Pass<"convert-row-reductions-to-kernels", "::mlir::ModuleOp"> {
  let summary = "Maps each row reduction on buffers to one warp per row";
  let description = [{
    For the CUDA backend, before the loop mapping: a `linalg.generic` on
    memrefs that folds the last axis of its input into a `[..., 1]` output
    with one associative float op (`addf`, `mulf`, `maximumf`, `maxnumf`,
    `minimumf`, `minnumf`: the row sums and maxima of layer norms and
    softmax-like cells) becomes a `gpu.launch` in which each warp reduces a
    row: lane l folds elements l, l + 32, ... (coalesced loads), five
    `gpu.shuffle xor` steps combine the lanes' partials, and lane 0 folds
    the result into the output's initial value. `block-size / 32` rows per
    block. Other reductions are left to the generic mapping, which gives
    each row to one thread.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "256",
           "Threads per block (a multiple of 32)">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def SinkViewsIntoKernels
    : Pass<"sink-views-into-kernels", "::mlir::ModuleOp"> {
  let summary = "Builds the views a kernel reads inside it";
  let description = [{
    Before outlining: every `memref.subview`, `memref.cast`,
    `memref.reinterpret_cast`, `memref.expand_shape` / `collapse_shape`
    (and the constants they take) that a `gpu.launch` uses from above is
    cloned into the launch, recursively, so that the outlined kernel takes
    the underlying buffer and the views' dynamic offsets instead of one full
    memref descriptor per view. A fused step that reads four gate windows of
    one buffer then takes that buffer once.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect"];
}

def ConvertParallelLoopsToKernels
    : Pass<"convert-parallel-loops-to-kernels", "::mlir::ModuleOp"> {
  let summary = "Maps each outermost scf.parallel to one GPU launch";
  let description = [{
    Every outermost `scf.parallel` of host code (from
    `convert-linalg-to-parallel-loops`: an elementwise or fused pointwise
    stage, a copy, a fill, the rows of a reduction) becomes a `gpu.launch`
    over its iteration space linearised in row-major order: consecutive
    threads take consecutive elements of the last (feature) axis, so loads
    and stores coalesce. `block-size` threads per block, as many blocks as
    needed, and a bound check in the kernel. Inner sequential loops (a
    reduction over a row) stay inside the thread.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "256",
           "Threads per block">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect"];
}

def OverlapKernelLaunches
    : Pass<"overlap-kernel-launches", "::mlir::ModuleOp"> {
  let summary = "Lets each kernel launch before the work ahead of it ends "
                "(programmatic dependent launch, sm_90+)";
  let description = [{
    Between a step's GEMM and its fused kernel, and between two kernels, the
    GPU idles while the next grid is launched. With programmatic dependent
    launch, the next grid may be scheduled while the one ahead of it drains,
    provided it waits for that work before touching memory. Every
    `gpu.launch` therefore starts with `nvvm.griddepcontrol wait` (the kernel
    waits until the grids ahead of it have completed and their writes are
    visible; a no-op when launched normally), with `let-dependents-launch`
    preceded by `nvvm.griddepcontrol launch_dependents` (the grid behind it,
    if launched early, may be scheduled once every block of this one has
    started: it waits for this one too; the CUDA runtime's own GEMMs then
    load their constant weights meanwhile), and on the host the launch is
    preceded by a call to `function` (no arguments), which tells the runtime
    that the next launch may use the attribute. Launches without
    the call keep the usual stream order, so kernels from elsewhere that do
    not wait are never launched early. The runtime may still launch a
    kernel in stream order (the CUDA runtime does after cuBLAS's bf16 and
    f16 GEMMs, where launching early made steps slower on the H100:
    docs/cuda.md).

    With `early-loads`, a kernel inside an `scf.for` (a time loop) reads
    what nothing in the loop writes before its wait: loads of a buffer (an
    allocation made outside the loop, or a function argument) whose every
    use inside the loop is a load, a dim or a view move ahead of the first
    other memory access, and the wait moves down to it (into the kernel's
    bounds check, where that holds all the rest). A buffer whose pointer is
    taken inside the loop (for a GEMM) counts as written. Before such a
    loop the host calls `order-function` (no arguments), which tells the
    runtime to launch the next grid in stream order: no grid that wrote
    those buffers before the loop still runs when one of its kernels
    starts. Idempotent.
  }];
  let options = [
    Option<"function", "function", "std::string",
           "\"rnn_cuda_overlap_next_launch\"",
           "Host function called before each launch that waits">,
    Option<"letDependentsLaunch", "let-dependents-launch", "bool", "true",
           "Let the grid behind each kernel launch once the kernel's blocks "
           "have started">,
    Option<"earlyLoads", "early-loads", "bool", "true",
           "In time loops, read what the loop never writes before the wait">,
    Option<"orderFunction", "order-function", "std::string",
           "\"rnn_cuda_order_next_launch\"",
           "Host function called before a loop whose kernels read before "
           "their wait">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

#endif // RNN_CONVERSION_PASSES_TD
