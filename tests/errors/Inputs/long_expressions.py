"""Writes the inputs of expression-limits.tile: a statement of TERMS terms
(`A[i] + 1.0 + ...`), or funcs h0..hDEPTH where each h_k(x) returns h_{k+1}(x) + h_{k+1}(x)."""
import sys

kind, n = sys.argv[1], int(sys.argv[2])
if kind == "terms":
    print("kernel k(A: f32[N], B: out f32[N]) grid(1) threads(1) { for i in range(N) {")
    print("    B[i] = A[i]" + " + 1.0" * n + ";")
    print("} }")
else:
    for k in range(n):
        print(f"func h{k}(x) {{ return h{k + 1}(x) + h{k + 1}(x); }}")
    print(f"func h{n}(x) {{ return x * 2.0; }}")
    print("kernel k(A: f32[N], B: out f32[N]) grid(1) threads(1) { for i in range(N) { B[i] = h0(A[i]); } }")
print("export k as k;")
