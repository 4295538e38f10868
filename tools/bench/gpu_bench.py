#!/usr/bin/env python3
"""GPU benchmark: tilec's NAME_cuda entry points next to PyTorch's kernels (tools/bench/gpu.sh).

Each case runs the tilec kernel and torch's kernel for the same problem on the same
inputs and stream, times both with CUDA events (best of --reps after warm-up), and
prints time, throughput, the ratio tilec / torch (above 1: tilec is faster) and the max
relative error of tilec's result against torch's. A tilec status other than TILE_SUCCESS,
or an error above the dtype's bound, fails the run (exit 1). Exit 77 without torch or a GPU.
"""

import argparse
import ctypes
import math
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True, help="libtilec_bench_gpu.so (tools/bench/gpu.sh --build-only)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="small sizes, 3 reps")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    ap.add_argument("--sweep", action="store_true",
                    help="also time the GEMM tile-shape variants of tools/bench/gemm_sweep.tile (f16)")
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"SKIP: no torch ({e})")
        return 77
    if not torch.cuda.is_available():
        print("SKIP: torch sees no CUDA device")
        return 77
    reps = 3 if args.quick else max(1, args.reps)
    lib = ctypes.CDLL(args.lib)
    lib.tile_last_error.restype = ctypes.c_char_p
    dev = torch.cuda.get_device_properties(0)
    print(f"gpu: {dev.name} (sm_{dev.major}{dev.minor}), torch {torch.__version__}")

    def entry(name, *argtypes):
        fn = getattr(lib, name)
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p, *argtypes]
        return fn

    P, I64, F32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float

    def timed(fn):
        """Best time of fn() in ms over reps, after two warm-up calls."""
        for _ in range(2):
            fn()
        torch.cuda.synchronize()
        best = math.inf
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            best = min(best, start.elapsed_time(end))
        return best

    failed = 0

    def case(name, run_tilec, run_torch, work, unit, bound):
        """work: flops or bytes per call; unit: 'TFLOP/s' or 'GB/s'."""
        nonlocal failed
        if args.filter not in name:
            return
        status = []

        def tilec_call():
            s = run_tilec(torch.cuda.current_stream().cuda_stream)
            if s != 0:
                status.append((s, lib.tile_last_error().decode(errors="replace")))

        got = run_torch_out = None
        try:
            run_tilec.out.fill_(float("nan"))  # what tilec does not write fails the error check
            tilec_call()
            torch.cuda.synchronize()
            if status:
                raise RuntimeError(f"status {status[0][0]}: {status[0][1]}")
            got = run_tilec.out.clone()
            run_torch_out = run_torch()
            err = ((got.float() - run_torch_out.float()).abs().max() /
                   run_torch_out.float().abs().max().clamp_min(1e-30)).item()
            t_tilec = timed(tilec_call)
            t_torch = timed(run_torch)
            if status:
                raise RuntimeError(f"status {status[0][0]} in a timed call: {status[0][1]}")
        except Exception as e:  # a failed launch or a CUDA error: report, go on
            print(f"{name}: FAILED: {e}")
            failed += 1
            return
        scale = 1e12 if unit == "TFLOP/s" else 1e9
        rate = lambda ms: work / (ms * 1e-3) / scale
        ok = err <= bound
        print(f"{name}: tilec {t_tilec:.3f} ms {rate(t_tilec):.2f} {unit} | torch {t_torch:.3f} ms "
              f"{rate(t_torch):.2f} {unit} | ratio {t_torch / t_tilec:.3f} | max rel err {err:.2e}"
              f"{'' if ok else f' ABOVE {bound:g}: FAILED'}")
        if not ok:
            failed += 1

    torch.manual_seed(0)
    h = torch.float16

    # GEMM f16 and bf16, C = A @ B, row-major (gemm_T_cuda(stream, A, B, C, M, K, N)), at the
    # sizes of issue 11: square 4096 and 8192, and a short K (M = N = 8192, K = 512).
    gemm_sizes = [(1024, 1024, 1024)] if args.quick else [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 512)]
    def gemm_cases(name, dt, bound):
        """Export `name` (gemm_T_cuda's signature) at every size of gemm_sizes, against A @ B."""
        gemm = entry(f"{name}_cuda", P, P, P, I64, I64, I64)
        for (M, N, K) in gemm_sizes:
            A = torch.randn(M, K, device="cuda", dtype=dt)
            B = torch.randn(K, N, device="cuda", dtype=dt)
            C = torch.empty(M, N, device="cuda", dtype=dt)
            run = lambda s, A=A, B=B, C=C, M=M, N=N, K=K: gemm(s, A.data_ptr(), B.data_ptr(), C.data_ptr(), M, K, N)
            run.out = C
            case(f"{name} {M}x{N}x{K}", run, lambda A=A, B=B: A @ B, 2.0 * M * N * K, "TFLOP/s", bound)

    for tname, dt in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        gemm_cases(f"gemm_{tname}", dt, 1e-2 if tname == "f16" else 2e-2)

    # gemm_f16 in thread-block clusters of 2 along N (gemm_f16_cluster2_cuda: A's tile
    # multicast to both blocks of a cluster on sm_90a, no rasterization), and of 2 x 2
    # (gemm_f16_cluster2x2_cuda: A along the cluster's rows, B along its columns), beside
    # gemm_f16.
    for cname in ("cluster2", "cluster2x2"):
        gemm_cases(f"gemm_f16_{cname}", h, 1e-2)

    # The linear layer's shape: C = X @ W^T with W stored [N, K] (gemm_f16_nt_cuda; on
    # sm_90a its transposed operand is a TMA box in memory order, with the warp roles).
    gemm_nt = entry("gemm_f16_nt_cuda", P, P, P, I64, I64, I64)
    for (M, N, K) in gemm_sizes[:2]:
        X = torch.randn(M, K, device="cuda", dtype=h)
        W = torch.randn(N, K, device="cuda", dtype=h)
        C = torch.empty(M, N, device="cuda", dtype=h)
        run = lambda s, X=X, W=W, C=C, M=M, N=N, K=K: gemm_nt(s, X.data_ptr(), W.data_ptr(), C.data_ptr(), M, K, N)
        run.out = C
        case(f"gemm_f16_nt {M}x{N}x{K}", run, lambda X=X, W=W: X @ W.t(), 2.0 * M * N * K, "TFLOP/s", 1e-2)

    # GEMM fp8 e4m3 -> f32, C = A @ B^T with B stored [N, K] (gemm_f8e4m3_nt_cuda), next to
    # cuBLASLt's fp8 GEMM through torch._scaled_mm (unit scales; it wants B column-major,
    # which B[N, K].t() is). Where this torch has no fp32 output for it, bf16 output.
    gemm8 = entry("gemm_f8e4m3_nt_cuda", P, P, P, I64, I64, I64)
    one = torch.ones((), device="cuda", dtype=torch.float32)
    for (M, N, K) in ([(1024, 1024, 1024)] if args.quick else [(4096, 4096, 4096), (8192, 8192, 8192)]):
        A = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
        B = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
        C = torch.empty(M, N, device="cuda", dtype=torch.float32)
        run = lambda s, A=A, B=B, C=C, M=M, N=N, K=K: gemm8(s, A.data_ptr(), B.data_ptr(), C.data_ptr(), M, K, N)
        run.out = C
        out_dtype, bound = torch.float32, 1e-3
        try:
            torch._scaled_mm(A[:16, :16].contiguous(), B[:16, :16].contiguous().t(), scale_a=one,
                             scale_b=one, out_dtype=torch.float32)
        except Exception:
            out_dtype, bound = torch.bfloat16, 1e-2
        ref = lambda A=A, B=B, od=out_dtype: torch._scaled_mm(A, B.t(), scale_a=one, scale_b=one, out_dtype=od)
        case(f"gemm_f8e4m3_nt {M}x{N}x{K}", run, ref, 2.0 * M * N * K, "TFLOP/s", bound)

    # Tile-shape variants (same body as gemm_f16, sm_90a image only: wgmma), to choose the defaults.
    if args.sweep:
        import os
        names = open(os.path.join(os.path.dirname(args.lib), "gemm_sweep.txt")).read().split()
        for (M, N, K) in ([(1024, 1024, 1024)] if args.quick else [(4096, 4096, 4096), (8192, 8192, 8192)]):
            A = torch.randn(M, K, device="cuda", dtype=h)
            B = torch.randn(K, N, device="cuda", dtype=h)
            C = torch.empty(M, N, device="cuda", dtype=h)
            for vname in names:
                fn = entry(vname + "_cuda", P, P, P, I64, I64, I64)
                run = lambda s, fn=fn, A=A, B=B, C=C, M=M, N=N, K=K: fn(s, A.data_ptr(), B.data_ptr(), C.data_ptr(), M, K, N)
                run.out = C
                case(f"{vname} {M}x{N}x{K}", run, lambda A=A, B=B: A @ B, 2.0 * M * N * K, "TFLOP/s", 1e-2)

    # Softmax f16 along rows (softmax_f16_cuda(stream, X, Y, M, N)).
    softmax = entry("softmax_f16_cuda", P, P, I64, I64)
    for (M, N) in ([(1024, 1024)] if args.quick else [(4096, 4096), (8192, 1000)]):
        X = torch.randn(M, N, device="cuda", dtype=h)
        Y = torch.empty(M, N, device="cuda", dtype=h)
        run = lambda s, X=X, Y=Y, M=M, N=N: softmax(s, X.data_ptr(), Y.data_ptr(), M, N)
        run.out = Y
        case(f"softmax_f16 {M}x{N}", run, lambda X=X: torch.softmax(X, dim=-1), 2.0 * M * N * 2, "GB/s", 1e-2)

    # Flash attention f16 forward, [B, H, S, D] (attn_fwd[_causal][_d64]_cuda(stream, Q, K, V, O,
    # B, H, S, scale)) at issue 11's B = 8, H = 16, S = 4096, D = 64 and 128, causal and not.
    # With --sweep, also tools/bench/gemm_sweep.tile's attn_nows[_d64]: the same kernels
    # without sm_90a's warp roles (one warpgroup issuing the TMA copies and the wgmma).
    attn_cases = [(D, causal, "attn_fwd" + ("_causal" if causal else "") + ("_d64" if D == 64 else ""))
                  for D in (64, 128) for causal in (False, True)]
    # attn_fwd[_causal]_wg2: 128 query rows on two consumer warpgroups, FA3's ping-pong on
    # sm_90a (lower/pingpong_consumers.cpp), next to attn_fwd's 64 rows on one.
    attn_cases += [(128, causal, "attn_fwd" + ("_causal" if causal else "") + "_wg2") for causal in (False, True)]
    if args.sweep:
        attn_cases += [(128, False, "attn_nows"), (64, False, "attn_nows_d64")]
    for D, causal, name in attn_cases:
        attn = entry(name + "_cuda", P, P, P, P, I64, I64, I64, F32)
        for (Bn, H, S) in ([(1, 4, 512)] if args.quick else [(8, 16, 4096)]):
            q, k, v = (torch.randn(Bn, H, S, D, device="cuda", dtype=h) for _ in range(3))
            o = torch.empty_like(q)
            scale = 1.0 / math.sqrt(D)
            run = lambda s, q=q, k=k, v=v, o=o, Bn=Bn, H=H, S=S, scale=scale, attn=attn: attn(
                s, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), Bn, H, S, scale)
            run.out = o
            ref = lambda q=q, k=k, v=v, scale=scale, causal=causal: F.scaled_dot_product_attention(
                q, k, v, is_causal=causal, scale=scale)
            flops = 4.0 * Bn * H * S * S * D * (0.5 if causal else 1.0)
            case(f"{name} B={Bn} H={H} S={S} D={D}", run, ref, flops, "TFLOP/s", 2e-2)

    # MLA decode (DeepSeek-V2/V3: 128 heads, latent 512 + rope 64, pages of 64 tokens),
    # mla_decode_T_cuda(stream, q_nope, q_pe, kv_c, k_pe, block_table, cache_seqlens, o, B, H,
    # NP, MP, scale), ragged lengths in [S/2, S], pages shuffled over the cache. torch:
    # gather each sequence's pages through the block table, then SDPA of [q_nope, q_pe]
    # against [kv_c, k_pe] with kv_c as the values, the tokens past the length masked (the
    # gather is part of torch's time, as the kernel reads through the table).
    H, DV, DPE, PAGE = 128, 512, 64, 64
    # _sm90a: two stages (226 KiB of shared memory), sm_90a only; _h16: 16 heads a block.
    mla_variants = [("f16", h, 2e-2), ("bf16", torch.bfloat16, 3e-2), ("h16_f16", h, 2e-2)]
    if dev.major == 9:
        mla_variants += [("f16_sm90a", h, 2e-2), ("bf16_sm90a", torch.bfloat16, 3e-2)]
    for tname, dt, bound in mla_variants:
        mla = entry(f"mla_decode_{tname}_cuda", P, P, P, P, P, P, P, I64, I64, I64, I64, F32)
        for (Bn, S) in ([(2, 256)] if args.quick else [(64, 4096), (132, 1024)]):
            MP = S // PAGE
            NP = Bn * MP
            qn = torch.randn(Bn, H, DV, device="cuda", dtype=dt)
            qp = torch.randn(Bn, H, DPE, device="cuda", dtype=dt)
            kv = torch.randn(NP, PAGE, DV, device="cuda", dtype=dt)
            kp = torch.randn(NP, PAGE, DPE, device="cuda", dtype=dt)
            table = torch.randperm(NP, device="cuda", dtype=torch.int32).reshape(Bn, MP)
            lens = torch.randint(S // 2, S + 1, (Bn,), device="cuda", dtype=torch.int32)
            o = torch.empty(Bn, H, DV, device="cuda", dtype=dt)
            scale = 1.0 / math.sqrt(DV + DPE)
            run = lambda s, qn=qn, qp=qp, kv=kv, kp=kp, table=table, lens=lens, o=o, Bn=Bn, NP=NP, MP=MP, scale=scale, mla=mla: mla(
                s, qn.data_ptr(), qp.data_ptr(), kv.data_ptr(), kp.data_ptr(), table.data_ptr(), lens.data_ptr(),
                o.data_ptr(), Bn, H, NP, MP, scale)
            run.out = o

            def ref(qn=qn, qp=qp, kv=kv, kp=kp, table=table, lens=lens, Bn=Bn, MP=MP, scale=scale):
                v = kv[table.long()].reshape(Bn, 1, MP * PAGE, DV)           # [B, 1, S, DV]
                k = torch.cat([v, kp[table.long()].reshape(Bn, 1, MP * PAGE, DPE)], dim=-1)
                q = torch.cat([qn, qp], dim=-1).unsqueeze(2)                   # [B, H, 1, DV + DPE]
                keep = (torch.arange(MP * PAGE, device="cuda")[None, :] < lens[:, None].long())
                out = F.scaled_dot_product_attention(q, k.expand(Bn, H, -1, -1), v.expand(Bn, H, -1, -1),
                                                     attn_mask=keep[:, None, None, :], scale=scale)
                return out.squeeze(2)

            tokens = lens.sum().item()
            flops = 2.0 * H * tokens * (DV + DPE + DV)
            case(f"mla_decode_{tname} B={Bn} H={H} S<={S} page={PAGE}", run, ref, flops, "TFLOP/s", bound)

    print(f"gpu bench: {'FAILED ' + str(failed) if failed else 'done'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
