#!/usr/bin/env python3
"""sass_check.py — checks the SASS of the v5 fused kernels' main loops (a tool, not part of the product).

    tools/sass_check.py BINARY [--cuobjdump PATH] [--all]

Disassembles BINARY (an executable or library holding the fused kernels, e.g. build/harness/paths/libnvfp4_paths_gpu.so) with
cuobjdump and finds, in every kernel that issues HGMMA, the smallest loop (a backward branch) that
holds all of its HGMMA instructions. For the v5 kernels (v5::dual_gemm_kernel,
optimized/gpu/fused/v5_kernel.cuh) the loop must hold 8 HGMMA (two k-stages of four) and no R2UR or WARPSYNC: when ptxas cannot keep
the loop's counters in uniform registers, it re-reads every wgmma descriptor and barrier address
through R2UR behind a WARPSYNC.ALL, with the same source and the same results, and the loop runs
slower (+4.7 us at 512x4096x7168, docs/fused-kernel.md v5f) — no correctness test can see it.
--all also lists the other HGMMA kernels (v3), which are reported, not checked.

The loop is the address range from a backward branch's target to the branch; blocks the loop
branches out to (the mbarrier retry loops) are not part of it. The development and CI machines
have no cuobjdump (the ctest then SKIPs); tools/gpu_run.sh runs this on the GPU machine.

Exit status: 0 all checked loops are clean, 1 a loop is not (or a v5 kernel's loop was not found),
125 cuobjdump is missing or BINARY holds no v5 kernel with HGMMA (nothing was checked).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

INSTR = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
FUNC = re.compile(r"\s+Function : (\S+)")
HEX = re.compile(r"0x([0-9a-f]+)")


def functions(text):
    """[(mangled name, [(address, instruction text)])] from `cuobjdump -sass` output, one entry per
    function body (a name that occurs in several cubins occurs several times)."""
    out = []
    for line in text.splitlines():
        m = FUNC.match(line)
        if m:
            out.append((m.group(1), []))
            continue
        m = INSTR.match(line)
        if m and out:
            out[-1][1].append((int(m.group(1), 16), m.group(2)))
    return out


def opcode(text):
    words = text.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def main_loop(ins):
    """(first, last) instruction index of the smallest loop holding every HGMMA, or None."""
    hgmma = [i for i, (_, t) in enumerate(ins) if opcode(t) == "HGMMA"]
    if not hgmma:
        return None
    index = {a: i for i, (a, _) in enumerate(ins)}
    best = None
    for i, (addr, text) in enumerate(ins):
        if opcode(text) != "BRA":  # BRA, BRA.U, BRA.U.ANY, BRA.DIV ...: the target is the last hex
            continue
        targets = HEX.findall(text)
        if not targets:
            continue
        j = index.get(int(targets[-1], 16))
        if j is None or j > hgmma[0] or i < hgmma[-1]:
            continue  # not backward, or does not hold every HGMMA
        if best is None or i - j < best[1] - best[0]:
            best = (j, i)
    return best


V5 = "fused2v516dual_gemm_kernel"  # nvfp4::gpu::fused::v5::dual_gemm_kernel<Config, Split, Probe>


def short_name(mangled):
    m = re.search(V5 + r"INS2_6ConfigILi(\d+)ELi(\d+)ELi(\d+)EEELNS2_5SplitE(\d)E(.*)EEvNS2_4Maps",
                  mangled)
    if m:
        bm, s, wg, split, probe = m.groups()
        kind = {"0": "tiles", "1": "pair", "2": "stream-K"}.get(split, "split " + split)
        return (f"v5 BM {bm} S {s} WG {wg} {kind}" +
                ("" if "7NoProbe" in probe else " probe"))
    m = re.search(r"fused2v3\d+(dual_gemm\w*kernel)ILi(\d+)E", mangled)
    if m:
        return f"v3 {m.group(1)} BN {m.group(2)} ({mangled[-30:]})"
    return mangled[:60]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--cuobjdump", default=None)
    ap.add_argument("--all", action="store_true")
    args = ap.parse_args()
    tool = args.cuobjdump or shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if not os.path.exists(tool):
        print("sass_check: cuobjdump not found (nothing checked)")
        return 125
    run = subprocess.run([tool, "-sass", args.binary], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"sass_check: cuobjdump failed on {args.binary}: {run.stderr.strip()[:400]}")
        return 1
    checked, bad = 0, 0
    print(f"{'kernel':44} {'loop':>5} {'HGMMA':>5} {'R2UR':>5} {'WARPSYNC':>8}  verdict")
    for name, ins in functions(run.stdout):
        v5 = V5 in name
        if not v5 and not args.all:
            continue
        loop = main_loop(ins)
        if loop is None:
            if v5 and any(opcode(t) == "HGMMA" for _, t in ins):
                print(f"{short_name(name):44} main loop not found  FAIL")
                checked, bad = checked + 1, bad + 1
            continue
        body = [opcode(t) for _, t in ins[loop[0] : loop[1] + 1]]
        n_h, n_r, n_w = body.count("HGMMA"), body.count("R2UR"), body.count("WARPSYNC")
        verdict = "-"
        if v5:
            checked += 1
            ok = n_h == 8 and n_r == 0 and n_w == 0
            bad += not ok
            verdict = "ok" if ok else "FAIL"
        print(f"{short_name(name):44} {len(body):5} {n_h:5} {n_r:5} {n_w:8}  {verdict}")
    if checked == 0:
        print(f"sass_check: no v5 kernel with HGMMA in {args.binary} (nothing checked)")
        return 125
    print(f"sass_check: {checked} v5 main loops, {bad} not clean")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
