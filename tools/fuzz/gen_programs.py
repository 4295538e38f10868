#!/usr/bin/env python3
"""Random valid tile programs, run on the CPU and in the GPU simulator against the reference.

Each program is a row kernel in the style of the stdlib (YARPGen-like: valid by
construction, random in everything that may vary): element type, threads per block,
tile shape (one row per block included), a loop over column blocks with ragged edges,
copies with pads, element-wise expression trees in parallel loops (arithmetic, min/max,
abs, selects, bounded transcendentals; bit operations on integers), row reductions with
a carry across column blocks, cumsum with TileLang's carry (y[i, BN - 1]), guarded direct
global stores, shared or fragment staging, or a small gemm. Every program is compiled for
the host, sm_80 and gfx942 (`-o P.o`, which runs ptxas and ld.lld; --batch programs as
one file of as many exports, each alone when that fails), and run with one `tilec run
--target=host,sim:sm_80,sim:gfx942` on ragged sizes, each target compared with one run
of the reference interpreter (target by target when that does not PASS, to name the
target). A finding is a compile that fails (crash, hang, any error: the program is
valid), a run that crashes or hangs, or a run that does not PASS (a mismatch, a
simulator report).

--backends-every K compiles and runs on the host only every K-th program (LLVM: a few
hundred milliseconds per program); every program still runs on sim:sm_80 and sim:gfx942
(frontend, Tile IR passes, thread-level lowering, simulator: a few tens of
milliseconds). tilec runs in tilec-fork-server (fuzzlib.py). The figures say how many
programs reached each stage.

    gen_programs.py --count 32 --seed 1          (bounded: what ctest runs)
    gen_programs.py --minutes 20 --keep-dir D    (prints the figures at the end)
    long_run.py --minutes 52 --seed 16 --keep-dir D  (the long run: both fuzzers, one core)

Exit status: 0 when nothing was found, 1 otherwise, 2 on a usage error.
"""

import os
import random
import shutil
import sys

import fuzzlib

FLOAT_TYPES = ("f32", "f16", "bf16")

# The expression forms, over subexpressions {a} and {b}. Integers wrap (i32); floats stay
# bounded (products through tanh, divisors at least 1, exp of a tanh) and continuous (a
# select that jumps where its operands meet turns the GPU's approximate tanh into a
# different branch).
INT_FORMS = ("(({a}) + ({b}))", "(({a}) - ({b}))", "(({a}) * ({b}))", "(({a}) & ({b}))", "(({a}) | ({b}))",
             "(({a}) ^ ({b}))", "min({a}, {b})", "max({a}, {b})", "(({a}) < ({b}) ? ({a}) : ({b}) + 1)",
             "(({a}) >> {shift})", "(({a}) / {div})", "(({a}) % {mod})", "abs({a})")
FLOAT_FORMS = ("(({a}) + ({b}))", "(({a}) - ({b}))", "tanh(({a}) * ({b}))", "min({a}, {b})", "max({a}, {b})",
               "abs({a})", "(({a}) > ({b}) ? ({a}) : ({b}))", "tanh({a})", "sigmoid({a})",
               "(({a}) / (abs({b}) + 1.0))", "exp(tanh({a}))", "sqrt(abs({a}) + 1.0)")


class Gen:
    """One random program: `text`, its export and the sizes to run it with."""

    def __init__(self, rng):
        self.rng = rng
        r = rng
        self.T = r.choice(FLOAT_TYPES + ("f32", "i32"))
        self.is_int = self.T == "i32"
        self.ACC = "i32" if self.is_int else "f32"
        self.threads = r.choice((32, 64, 128, 256))
        self.kind = r.choice(("rows", "rows", "rows", "gemm")) if not self.is_int else "rows"
        if self.kind == "gemm":
            self.gemm_program()
        else:
            self.rows_program()

    # ---- expressions -------------------------------------------------------------
    def const(self):
        if self.is_int:
            return str(self.rng.choice((0, 1, 2, 3, 5, 7, 255)))
        return self.rng.choice(("0.5", "2.0", "1.0", "0.25", "3.0", "0.0"))

    def expr(self, leaves, depth):
        """A bounded expression over `leaves` (values in [-8, 8] for floats)."""
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            return r.choice(leaves) if r.random() < 0.8 else self.const()
        a = self.expr(leaves, depth - 1)
        b = self.expr(leaves, depth - 1)
        form = r.choice(INT_FORMS if self.is_int else FLOAT_FORMS)
        return form.format(a=a, b=b, shift=r.randrange(0, 5), div=r.choice((1, 2, 3, 7)), mod=r.choice((2, 3, 16)))

    # ---- row kernels ---------------------------------------------------------------
    def rows_program(self):
        r = self.rng
        BM = r.choice((1, 1, 2, 4, 8))
        BN = r.choice((8, 16, 32, 64, 128, 256))
        while BM * BN < 2 and BN < 256:
            BN *= 2
        T, ACC = self.T, self.ACC
        stage = r.choice(("fragment", "fragment", "shared"))
        red = r.choice((None, "sum", "max", "min"))
        scan = r.random() < 0.35 and not self.is_int and stage == "fragment"
        direct = r.random() < 0.35
        use_w = r.random() < 0.5
        depth = r.randrange(1, 4)
        neutral = {"sum": "0", "max": "-inf" if not self.is_int else "-2147483647",
                   "min": "inf" if not self.is_int else "2147483647"}
        if self.is_int and red == "sum":
            red = "max"  # an integer sum of products may exceed i32 (wraps alike, but keep it simple)
        inner = r.random() < 0.3  # a serial loop with a `var` in the parallel body
        mirror = r.random() < 0.3 and not (red or scan)  # y through shared memory, each row reversed
        atomic = r.random() < 0.3 and not self.is_int and not scan  # atomic_add of y into an inout tensor
        uniform_if = r.random() < 0.3  # a block-uniform `if` around the copy out

        params = [f"X: {T}[M, N]"]
        if use_w:
            params.append(f"W: {T}[N]")
        params.append(f"Y: out {T}[M, N]")
        if red:
            params.append(f"R: out {T}[M]")
        if direct:
            params.append(f"Z: out {T}[M, N]")
        if atomic:
            params.append("U: inout f32[M, N]")
        lines = [f"kernel fz<BM: int = {BM}, BN: int = {BN}>({', '.join(params)})",
                 f"    grid(cdiv(M, BM)) threads({self.threads})", "{",
                 "    let r0 = block.x * BM;",
                 f"    {stage} x: {ACC}[BM, BN];",
                 f"    fragment y: {ACC}[BM, BN];"]
        if red:
            lines += [f"    fragment m: {ACC}[BM];", f"    fill(m, {neutral[red]});"]
        if scan:
            lines += [f"    fragment carry: {ACC}[BM];", "    fill(carry, 0);"]
        if mirror:
            lines.append(f"    shared sh: {ACC}[BM, BN];")
        lines.append("    for t in range(cdiv(N, BN)) {")
        lines.append("        let c0 = t * BN;")
        pad = r.choice(("", ", pad = 1", ", pad = 0"))
        lines.append(f"        copy(X[r0, c0], x{pad});")
        leaves = ["x[i, c]"]
        if use_w:
            leaves.append("w")
        if not self.is_int:
            leaves.append("cast<f32>(c) * 0.125")
        else:
            leaves.append("cast<i32>(c)")
        e = self.expr(leaves, depth)
        wlet = "            let w = W[min(c0 + c, N - 1)];\n" if use_w else ""
        zero = "0"
        body = e
        if red or scan:
            fill_value = neutral[red] if red else zero
            body = f"c0 + c < N ? {e} : {fill_value}"
        lines.append("        for i, c in parallel(BM, BN) {")
        if wlet:
            lines.append(wlet.rstrip("\n"))
        if inner:
            # k runs over a few columns to the left, clamped inside the tile: reads of x only.
            lines.append(f"            var a: {ACC} = 0;")
            lines.append(f"            for k in range({r.randrange(1, 4)}) {{ a += x[i, max(c - k, 0)]; }}")
            body = f"c0 + c < N ? ({body}) + a : ({body})" if not (red or scan) else body
        # An expression of constants alone is an i64 constant: i32 needs the cast.
        lines.append(f"            y[i, c] = {f'cast<i32>({body})' if self.is_int else body};")
        if direct:
            e2 = self.expr(leaves, max(1, depth - 1))
            lines.append("            if r0 + i < M && c0 + c < N {")
            cast = f"cast<{T}>({e2})" if T != ACC or self.is_int else e2
            lines.append(f"                Z[r0 + i, c0 + c] = {cast};")
            lines.append("            }")
        lines.append("        }")
        if red:
            lines.append(f"        reduce_{red}(y, m, dim = 1, clear = false);")
        if scan:
            lines.append("        cumsum(y, x, dim = 1);")
            src = "x"
            lines.append(f"        for i, c in parallel(BM, BN) {{ {src}[i, c] += carry[i]; }}")
            lines.append(f"        for i in parallel(BM) {{ carry[i] = {src}[i, BN - 1]; }}")
            lines.append(f"        copy({src}, Y[r0, c0]);")
        else:
            if mirror:
                # Another thread's element: the barrier between the two statements is by design.
                lines.append("        copy(y, sh);")
                lines.append("        for i, c in parallel(BM, BN) { y[i, c] = sh[i, BN - 1 - c] + y[i, c]; }")
            out = "        copy(y, Y[r0, c0]);"
            if uniform_if:
                # Block-uniform: every thread takes the same branch.
                lines += ["        if t % 2 == 0 {", "    " + out, "        } else {", "    " + out, "        }"]
            else:
                lines.append(out)
        if atomic:
            lines.append("        atomic_add(U[r0, c0], y);")
        lines.append("    }")
        if red:
            post = self.expr(["m[i]"], 1)
            if red != "sum" or self.is_int:
                post = f"cast<i32>({post})" if self.is_int else post
                lines.append(f"    for i in parallel(BM) {{ m[i] = {post}; }}")
            lines.append("    copy(m, R[r0]);")
        lines.append("}")
        lines.append("export fz as fz;")
        self.text = "\n".join(lines) + "\n"
        self.sizes = {"M": r.randrange(1, 3 * BM + 3), "N": r.randrange(1, 3 * BN + 2)}
        self.scalars = {}
        self.rtol = None if self.is_int else ("1e-4" if red == "sum" or scan else None)
        if T in ("f16", "bf16") and (red == "sum" or scan):
            self.rtol = "3e-2"
        # The GPU's tanh.approx and friends are good to about 2^-11: an f32 output (U, or
        # Y when T is f32) of them needs that bound; 16-bit outputs keep theirs (--rtol is
        # one bound for every output).
        # Likewise an f32 output (U) of a 16-bit program: its values went through 16-bit
        # arithmetic (w * w in bf16), which the reference rounds from f64, the targets from f32.
        if not self.is_int and (any(f in self.text for f in ("tanh(", "sigmoid(", "exp(")) or
                                (atomic and T in ("f16", "bf16"))):
            loose = {"f32": "2e-3", "f16": "1e-2", "bf16": "2e-2"}[T]
            self.rtol = str(max(float(self.rtol or 0), float(loose)))
        # f32 values built from O(1) operands carry an absolute error of about an ulp of
        # those operands, which a relative bound misses where terms cancel (a row minimum
        # of sqrt(|x| + 1) - max(1, w) near 0 was 4e-8 off: below an ulp of 1.0); the
        # default atol (1e-8) is for results as large as their operands.
        self.atol = "1e-6" if T == "f32" else None

    # ---- a small gemm ----------------------------------------------------------------
    def gemm_program(self):
        r = self.rng
        T = r.choice(("f16", "bf16", "f32"))
        # Pads: zero (the CPU gemm's k loop then stops at the operands' valid k) or one
        # (whose products add to the stored sums, through the rows and columns the
        # stored-extent analysis lets the CPU gemm skip at the edges).
        pad_a, pad_b = (r.choice(("", ", pad = 0", ", pad = 1")) for _ in range(2))
        BM, BN, BK = r.choice((16, 32, 64)), r.choice((16, 32, 64)), r.choice((16, 32))
        threads = r.choice((64, 128))
        stages = r.choice((1, 2, 3))
        epilogue = self.expr(["acc[i, j]"], r.randrange(0, 3)) if r.random() < 0.5 else None
        lines = [f"kernel fz<BM: int = {BM}, BN: int = {BN}, BK: int = {BK}>",
                 f"    (A: {T}[M, K], B: {T}[K, N], C: out {T}[M, N])",
                 f"    grid(cdiv(N, BN), cdiv(M, BM)) threads({threads})", "{",
                 "    let m0 = block.y * BM;", "    let n0 = block.x * BN;",
                 f"    shared a: {T}[BM, BK];", f"    shared b: {T}[BK, BN];",
                 "    fragment acc: f32[BM, BN];", "    fill(acc, 0);",
                 f"    for k in pipelined(cdiv(K, BK), stages = {stages}) {{",
                 f"        copy(A[m0, k * BK], a{pad_a});", f"        copy(B[k * BK, n0], b{pad_b});",
                 "        gemm(a, b, acc);", "    }"]
        if epilogue:
            lines.append(f"    for i, j in parallel(BM, BN) {{ acc[i, j] = {epilogue}; }}")
        lines += ["    copy(acc, C[m0, n0]);", "}", "export fz as fz;"]
        self.text = "\n".join(lines) + "\n"
        self.sizes = {"M": r.randrange(1, 2 * BM + 5), "N": r.randrange(1, 2 * BN + 5),
                      "K": r.randrange(1, 3 * BK + 5)}
        self.scalars = {}
        self.rtol = "3e-2"
        self.atol = None


TARGETS = ("host", "sim:sm_80", "sim:gfx942")


def check_batch(indices, seed, tilec, work, timeout, backends_every=1):
    """Compiles programs `indices` as one file (one kernel and export each) for host, sm_80
    and gfx942, then runs each on the three targets in one `tilec run`. Returns
    [(index, path, text, [(kind, what, cmd, output)], runs, stages)] per program.

    With backends_every K > 1, only the programs whose index is a multiple of K are
    compiled and run on the host; the others run on sim:sm_80 and sim:gfx942 only (the
    frontend, the tile passes, the thread-level lowering, the simulator and the
    reference: a few milliseconds, where LLVM's code generation takes a few hundred).

    The joint compile builds every program's host code, cubin (PTX, then ptxas) and code
    object (ld.lld); when it fails, each program is compiled alone, so that a finding is
    the program's own. A joint run that does not PASS on every target is rerun target by
    target, so that a finding names its target; a finding of the joint run itself is kept
    when those find nothing."""
    progs = []
    for index in indices:
        rng = random.Random(f"{seed}:{index}")
        g = Gen(rng)
        d = os.path.join(work, f"p{index:05d}")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "fz.tile")
        with open(path, "w") as f:
            f.write(g.text)
        progs.append((index, rng, g, d, path, index % backends_every == 0))
    findings = {index: [] for index in indices}
    runs = {index: 0 for index in indices}
    stages = {index: [] for index in indices}

    def compile_alone(index, path, d):
        cmd = [tilec, path, "--target=host,sm_80,gfx942", "-j", "1", "-o", os.path.join(d, "fz.o")]
        code, out, _ = fuzzlib.run(cmd, timeout, label="compile")
        runs[index] += 1
        return code, out, cmd

    def judge(index, code, out, cmd):
        why = fuzzlib.judge_compile(code, out)
        if why or code != 0:
            findings[index].append(("crash" if why and code not in (0, 1) else "compile-error",
                                    why or "a valid program refused", cmd, out))

    full = [p[:5] for p in progs if p[5]]
    if len(full) == 1:
        index, _, _, d, path = full[0]
        judge(index, *compile_alone(index, path, d))
        stages[index].append("compile")
    elif full:
        # The kernels renamed fz<index>, so that one file holds them all.
        bd = os.path.join(work, f"b{indices[0]:05d}")
        os.makedirs(bd, exist_ok=True)
        bpath = os.path.join(bd, "batch.tile")
        with open(bpath, "w") as f:
            for index, _, g, _, _ in full:
                f.write(g.text.replace("kernel fz<", f"kernel fz{index}<")
                        .replace("export fz as fz;", f"export fz{index} as fz{index};") + "\n")
        cmd = [tilec, bpath, "--target=host,sm_80,gfx942", "-j", "1", "-o", os.path.join(bd, "batch.o")]
        code, out, _ = fuzzlib.run(cmd, timeout * len(full), label="compile")
        for index, *_ in full:
            runs[index] += 1 / len(full)
            stages[index].append("compile")
        if code != 0 or fuzzlib.judge_compile(code, out):
            for index, _, _, d, path in full:
                judge(index, *compile_alone(index, path, d))
        shutil.rmtree(bd, ignore_errors=True)

    for index, rng, g, d, path, on_host in progs:
        targets = TARGETS if on_host else tuple(t for t in TARGETS if t != "host")
        size_arg = ",".join(f"{k}={v}" for k, v in g.sizes.items())
        base = [tilec, "run", path, "--size", size_arg, "--repeat", "1", "--seed", str(rng.randrange(1, 1 << 30))]
        if g.rtol:
            base += ["--rtol", g.rtol]
        if g.atol:
            base += ["--atol", g.atol]

        def run_on(targets, run_timeout):
            cmd = base + ["--target=" + ",".join(targets)]
            code, out, _ = fuzzlib.run(cmd, run_timeout, label="run " + ",".join(targets))
            runs[index] += 1
            why = fuzzlib.judge_run(code, out)
            if why:
                return ("hang" if code is None else "crash", f"{','.join(targets)}: {why}", cmd, out)
            if code != 0 or "PASS" not in out:
                return ("mismatch", f"{','.join(targets)}: no PASS", cmd, out)
            return None

        joint = run_on(targets, timeout * len(targets))
        if joint:
            alone = [f for f in (run_on([t], timeout) for t in targets) if f]
            findings[index] += alone or [joint]
        stages[index] += [f"run {t}" for t in targets]
    return [(p[0], p[4], p[2].text, findings[p[0]], runs[p[0]], stages[p[0]]) for p in progs]


def main():
    ap = fuzzlib.common_args(__doc__, 40, "programs")
    ap.add_argument("--batch", type=int, default=8,
                    help="programs handled together: those compiled are compiled as one file of as many "
                         "exports (default %(default)s)")
    ap.add_argument("--backends-every", type=int, default=1, metavar="K",
                    help="compile for host, sm_80 and gfx942 and run on the host only every K-th program; "
                         "every program runs on sim:sm_80 and sim:gfx942 (default %(default)s: all of them)")
    args = ap.parse_args()

    def record(result, tally, keep):
        i, path, text, findings, runs, stages = result
        tally.add("programs")
        tally.add("runs", runs)
        for stage in stages:
            tally.add(f"stage:{stage}")
        for kind, what, cmd, out in findings:
            kept = os.path.join(keep, f"p{i:05d}.tile")
            shutil.copy(path, kept)
            cmd = [kept if c == path else c for c in cmd]
            tally.finding(kind, f"program {i} ({kept}): {what}", cmd, out)
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)

    ran = fuzzlib.drive("gen_programs", args, "programs",
                        lambda indices, work: check_batch(indices, args.seed, args.tilec, work, args.timeout,
                                                          max(1, args.backends_every)),
                        record, batch=max(1, args.batch))
    if ran is None:
        return 2
    tally = ran[0]
    c = tally.counts
    print(f"gen_programs: {c['programs']} programs; run on sim:sm_80 {c['stage:run sim:sm_80']} and sim:gfx942 "
          f"{c['stage:run sim:gfx942']} (frontend, tile passes, thread-level lowering, simulator) against the "
          f"reference; compiled for host, sm_80 (ptxas) and gfx942 (ld.lld) {c['stage:compile']} and run on the "
          f"host {c['stage:run host']}"
          + (f" (1 program in {args.backends_every})" if args.backends_every > 1 else ""))
    tally.counts["runs"] = round(tally.counts["runs"])
    return fuzzlib.finish("gen_programs", args, *ran[:3],
                          ("programs", "runs", "crash", "hang", "compile-error", "mismatch"), ran[3])


if __name__ == "__main__":
    sys.exit(main())
