#!/usr/bin/env python3
"""submission_driver.py - runs a GPU MODE style Python submission as one harness trial (docs/design.md §3, §4).

The harness starts this program as a trial's child process, in place of its own binary, and reads
the same messages from it as from a built-in path's child (harness/trial/trial.hpp): one line per message
on the pipe descriptor --fd, fields separated by tabs, backslash, tab and newline escaped:

    enter STAGE | leave STAGE SECONDS | describe TEXT | note TEXT | skip REASON | error MESSAGE
    | output CALL [SET] | done

Usage:
    submission_driver.py describe FILE.py
        One JSON line, without importing FILE.py: {"toggles": [...the submission's own...],
        "provided": [...], "stages": {toggle: [extra stages]}, "data": "torch"|"numpy",
        "torch": whether torch is importable here}.
    submission_driver.py run --fd FD --dir DIR --submission FILE.py [--toggles COMBO]
                             [--warmup N] [--runs R]

Stages of `run`, each timed between its enter and leave messages:
    setup    (the driver's own work) read the case, check the chosen toggles, the data kind
    load     import FILE.py with NVFP4_TOGGLES set: import-time work is timed here
    init     build `data` (uploads to the GPU), wrap custom_kernel (torch.compile when asked)
    tune     only with compile / max-autotune: the first call, which compiles
    warmup   N calls
    capture  only with graph: one call captured in a torch.cuda.CUDAGraph
    run      R checked calls: fresh inputs copied in place, output poisoned, call, output written
    teardown references dropped
A Python exception ends the trial with `error` (the message names the stage's work); a missing
file, a module without custom_kernel, an exception at import, a wrong output dtype or shape are
each such an error, with the reason.

Toggles (a combination is written as the harness writes it: names joined with '+', or "plain"):
    provided by the driver, for any torch submission:
      compile       fn = torch.compile(custom_kernel)                (adds stage tune)
      max-autotune  fn = torch.compile(custom_kernel, mode="max-autotune"); with compile as well,
                    the mode is max-autotune                          (adds stage tune)
      graph         after warm-up, capture one call of fn in a torch.cuda.CUDAGraph; every later
                    call copies its inputs into the captured tensors and replays (adds stage capture)
    the submission's own: the names in a module-level literal list NVFP4_TOGGLES = ["a", "b"],
      read with `ast` (no import). The chosen ones reach the submission before import through the
      environment variable NVFP4_TOGGLES ('+'-joined, "" when none), so import-time behaviour can
      depend on them. Names: lower-case letters, digits, '-', '_'; not a provided name.
    NVFP4_DATA = "numpy" (a module-level literal) asks for numpy arrays on the CPU instead of torch
      tensors (what CI runs, without torch); the provided toggles need torch and are SKIP then.

Inputs, in the trial directory DIR (written by the harness):
    DIR/case/       a.npy b1.npy b2.npy sfa.npy sfb1.npy sfb2.npy, uint8, batch-first (L, rows, cols)
                    or 2-D for L = 1 (reference/case_dir.hpp); alphas.json {"alpha1": x, "alpha2": y}
                    optional. GPU MODE's convention has no global scales: alphas other than 1 are SKIP.
    DIR/call<i>/    optional, before checked call i (0-based): any of the six arrays, copied in place
                    into the tensors `data` holds (an engine's pattern; a captured graph sees them);
                    a file `set` there holds the harness's number of that input set, echoed in the
                    call's `output` message.
Outputs: DIR/out<i>.f16, the output of checked call i as L*M*N fp16 bit patterns in (L, M, N) order.

`data`, exactly as GPU MODE's nvfp4_dual_gemm task hands it to custom_kernel(data)
(gpu-mode/reference-kernels, problems/nvidia/nvfp4_dual_gemm/reference.py generate_input, task.py):
a tuple of ten tensors on the GPU,
    (a, b1, b2, sfa, sfb1, sfb2, sfa_permuted, sfb1_permuted, sfb2_permuted, c)
    a, b1, b2     torch.float4_e2m1fn_x2, shape (M, K/2, L) resp. (N, K/2, L): batch-last views
                  (permute(1, 2, 0)) of C-contiguous (L, rows, K/2) buffers, i.e. our byte layout
    sfa, sfb1/2   torch.float8_e4m3fn, shape (M, K/16, L) resp. (N, K/16, L): the same kind of
                  views of (L, rows, K/16) buffers
    s*_permuted   torch.float8_e4m3fn, shape (32, 4, ceil(rows/128), 4, ceil(K/64), L): views
                  (permute(3, 4, 1, 5, 2, 0)) of C-contiguous (L, Rt, Ct, 32, 4, 4) buffers, the
                  128x4 tiled layout of docs/design.md §1: element [r%32, (r%128)//32, r//128,
                  c%4, c//4, l] is the scale of row r, scale column c. Padding rows and columns are
                  zero here (GPU MODE leaves them unspecified).
    c             torch.float16, shape (M, N, L): a view of an (L, M, N) buffer; the output may be
                  written into it and returned, or returned as a new tensor.
custom_kernel returns a float16 tensor of shape (M, N, L); element [m, n, l] is C[l][m][n].
With NVFP4_DATA = "numpy" the same ten, as numpy views with the same shapes: uint8 for the FP4 and
FP8 ones (numpy has no such dtypes; the bytes are the same), float16 for c.
"""
import argparse
import ast
import importlib.util
import json
import os
import sys
import time
import traceback
import types

PROVIDED = {"compile": ["tune"], "max-autotune": ["tune"], "graph": ["capture"]}
POISON_BITS = 0x7D5A  # harness/check/compare.hpp kPoisonBits: a signalling NaN no arithmetic produces
ARRAYS = ("a", "b1", "b2", "sfa", "sfb1", "sfb2")
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")


class TrialError(Exception):
    """A reason the trial cannot go on, reported as an `error` message."""


class TrialSkip(Exception):
    """A reason the trial cannot run here, reported as a `skip` message."""


# --- the pipe -----------------------------------------------------------------------------------

def escape(text):
    return str(text).replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


class Channel:
    """The child's end of the pipe: one os.write per message, so nothing waits in a buffer."""

    def __init__(self, fd):
        self.fd = fd

    def send(self, kind, *fields):
        line = "\t".join([kind] + [escape(f) for f in fields]) + "\n"
        data = line.encode("utf-8", "replace")
        while data:
            n = os.write(self.fd, data)
            data = data[n:]

    def stage(self, name, body):
        """Runs body() as one stage; an exception leaves the stage open (the parent knows where)."""
        self.send("enter", name)
        t0 = time.perf_counter()
        result = body()
        self.send("leave", name, "%.6f" % (time.perf_counter() - t0))
        return result


# --- the submission, read without importing it --------------------------------------------------

def read_declarations(path):
    """The module-level literals NVFP4_TOGGLES and NVFP4_DATA, parsed with ast (nothing runs)."""
    if not os.path.isfile(path):
        raise TrialError("submission %s: no such file" % path)
    with open(path, "rb") as f:
        source = f.read()
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as e:
        raise TrialError("submission %s: syntax error at line %s: %s" % (path, e.lineno, e.msg))
    toggles, data = [], "torch"
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if not isinstance(target, ast.Name) or target.id not in ("NVFP4_TOGGLES", "NVFP4_DATA"):
                continue
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                raise TrialError("submission %s: %s must be a literal (line %d)" % (path, target.id, node.lineno))
            if target.id == "NVFP4_DATA":
                if value not in ("torch", "numpy"):
                    raise TrialError("submission %s: NVFP4_DATA must be \"torch\" or \"numpy\"" % path)
                data = value
            else:
                if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                    raise TrialError("submission %s: NVFP4_TOGGLES must be a list of strings" % path)
                toggles = list(value)
    for name in toggles:
        if not name or set(name) - NAME_CHARS or name == "plain":
            raise TrialError("submission %s: bad toggle name %r (lower-case letters, digits, '-', '_')" % (path, name))
        if name in PROVIDED:
            raise TrialError("submission %s: toggle %r is provided by the harness; choose another name" % (path, name))
    if len(set(toggles)) != len(toggles):
        raise TrialError("submission %s: a toggle is declared twice in NVFP4_TOGGLES" % path)
    return toggles, data


def parse_combo(text):
    if not text or text == "plain":
        return []
    return sorted(set(text.split("+")))


# --- inputs -------------------------------------------------------------------------------------

def load_arrays(folder, np, required):
    """The .npy arrays present in `folder` as batch-first uint8 (L, rows, cols)."""
    out = {}
    for name in ARRAYS:
        path = os.path.join(folder, name + ".npy")
        if not os.path.exists(path):
            if required:
                raise TrialError("input case %s: %s.npy is missing" % (folder, name))
            continue
        arr = np.load(path, allow_pickle=False)
        if arr.dtype != np.uint8 or arr.ndim not in (2, 3):
            raise TrialError("input %s: expected a 2-D or 3-D uint8 array, got %s %s" % (path, arr.dtype, arr.shape))
        out[name] = arr[None] if arr.ndim == 2 else arr
    return out


def read_alphas(folder):
    path = os.path.join(folder, "alphas.json")
    if not os.path.exists(path):
        return 1.0, 1.0
    with open(path) as f:
        d = json.load(f)
    return float(d.get("alpha1", 1.0)), float(d.get("alpha2", 1.0))


def case_shape(arrays):
    L, M, K2 = arrays["a"].shape
    N = arrays["b1"].shape[1]
    K = 2 * K2
    expect = {"a": (L, M, K // 2), "b1": (L, N, K // 2), "b2": (L, N, K // 2),
              "sfa": (L, M, K // 16), "sfb1": (L, N, K // 16), "sfb2": (L, N, K // 16)}
    if K % 16 != 0:
        raise TrialError("input case: K = %d is not a multiple of 16" % K)
    for name, shape in expect.items():
        if arrays[name].shape != shape:
            raise TrialError("input case: %s has shape %s; A and B1 imply %s" % (name, arrays[name].shape, shape))
    return M, N, K, L


def tiled_scales(np, plain):
    """(L, rows, K/16) plain scales -> the C-contiguous (L, Rt, Ct, 32, 4, 4) tiled buffer."""
    L, rows, cols = plain.shape
    rt, ct = -(-rows // 128), -(-cols // 4)
    padded = np.zeros((L, rt * 128, ct * 4), dtype=np.uint8)
    padded[:, :rows, :cols] = plain
    # row r = 128*mm + 32*mm4 + mm32, column c = 4*kk + kk4 -> buffer [l, mm, kk, mm32, mm4, kk4]
    return np.ascontiguousarray(padded.reshape(L, rt, 4, 32, ct, 4).transpose(0, 1, 4, 3, 2, 5))


class Inputs:
    """The batch-first buffers `data` views, and the in-place updates between calls."""

    def __init__(self, np, arrays, torch=None):
        self.np, self.torch = np, torch
        self.M, self.N, self.K, self.L = case_shape(arrays)
        host = dict(arrays)
        for name in ("sfa", "sfb1", "sfb2"):
            host[name + "_tiled"] = tiled_scales(np, arrays[name])
        host["c"] = np.zeros((self.L, self.M, self.N), dtype=np.float16)
        if torch is None:
            self.buffers = {k: np.ascontiguousarray(v) for k, v in host.items()}
        else:
            self.buffers = {k: torch.from_numpy(np.ascontiguousarray(v)).to("cuda") for k, v in host.items()}

    def data(self):
        b = self.buffers
        if self.torch is None:
            last = lambda x: x.transpose(1, 2, 0)
            tiled = lambda x: x.transpose(3, 4, 1, 5, 2, 0)
            fp4 = fp8 = lambda x: x
        else:
            t = self.torch
            last = lambda x: x.permute(1, 2, 0)
            tiled = lambda x: x.permute(3, 4, 1, 5, 2, 0)
            fp4 = lambda x: x.view(t.float4_e2m1fn_x2)
            fp8 = lambda x: x.view(t.float8_e4m3fn)
        return (fp4(last(b["a"])), fp4(last(b["b1"])), fp4(last(b["b2"])),
                fp8(last(b["sfa"])), fp8(last(b["sfb1"])), fp8(last(b["sfb2"])),
                fp8(tiled(b["sfa_tiled"])), fp8(tiled(b["sfb1_tiled"])), fp8(tiled(b["sfb2_tiled"])),
                last(b["c"]))

    def update(self, arrays):
        """Copies new arrays into the existing buffers (same addresses: a captured graph sees them)."""
        np = self.np
        for name, arr in arrays.items():
            if arr.shape != tuple(self.buffers[name].shape):
                raise TrialError("fresh input %s has shape %s; the case has %s"
                                 % (name, arr.shape, tuple(self.buffers[name].shape)))
            self._copy(name, arr)
            if name.startswith("sf"):
                self._copy(name + "_tiled", tiled_scales(np, arr))

    def _copy(self, name, arr):
        if self.torch is None:
            self.buffers[name][...] = arr
        else:
            self.buffers[name].copy_(self.torch.from_numpy(self.np.ascontiguousarray(arr)))

    def poison(self):
        c = self.buffers["c"]
        if self.torch is None:
            c.view(self.np.uint16)[...] = POISON_BITS
        else:
            c.view(self.torch.int16).fill_(POISON_BITS)

    def output_bits(self, out):
        """The returned output as (L, M, N) uint16 bit patterns; TrialError when dtype or shape is wrong."""
        np, want = self.np, (self.M, self.N, self.L)
        if self.torch is None:
            if not isinstance(out, np.ndarray):
                raise TrialError("custom_kernel returned %s; expected a float16 numpy array of shape %s"
                                 % (type(out).__name__, want))
            if out.dtype != np.float16 or out.shape != want:
                raise TrialError("custom_kernel returned %s %s; expected float16 %s" % (out.dtype, out.shape, want))
            return np.ascontiguousarray(out.transpose(2, 0, 1)).view(np.uint16)
        t = self.torch
        if not isinstance(out, t.Tensor):
            raise TrialError("custom_kernel returned %s; expected a torch.float16 tensor of shape %s"
                             % (type(out).__name__, want))
        if out.dtype != t.float16 or tuple(out.shape) != want:
            raise TrialError("custom_kernel returned %s %s; expected torch.float16 %s"
                             % (out.dtype, tuple(out.shape), want))
        return out.permute(2, 0, 1).contiguous().view(t.int16).cpu().numpy().view(np.uint16)


# --- the trial ----------------------------------------------------------------------------------

def import_submission(path):
    """Imports FILE.py as module `submission`; GPU MODE's `task` module is provided when absent."""
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    if "task" not in sys.modules and not os.path.exists(os.path.join(folder, "task.py")):
        task = types.ModuleType("task")
        task.input_t, task.output_t = tuple, object
        sys.modules["task"] = task
    spec = importlib.util.spec_from_file_location("submission", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # SystemExit included: an import must not end the trial silently
        traceback.print_exc()
        raise TrialError("exception at import of %s: %s: %s" % (path, type(e).__name__, e))
    kernel = getattr(module, "custom_kernel", None)
    if not callable(kernel):
        raise TrialError("submission %s defines no custom_kernel(data)" % path)
    return kernel


def run_trial(ch, args):
    state = {}

    def setup():
        own, data_kind = read_declarations(args.submission)
        chosen = parse_combo(args.toggles)
        unknown = [t for t in chosen if t not in PROVIDED and t not in own]
        if unknown:
            raise TrialError("unknown toggle %s (provided: %s; the submission's: %s)"
                             % (", ".join(unknown), ", ".join(sorted(PROVIDED)), ", ".join(own) or "none"))
        provided = [t for t in chosen if t in PROVIDED]
        import numpy as np
        torch = None
        if data_kind == "numpy":
            if provided:
                raise TrialSkip("toggle %s needs torch; this submission asks for numpy data" % "+".join(provided))
        else:
            try:
                import torch
            except ImportError as e:
                raise TrialSkip("the submission needs torch: %s" % e)
            if not torch.cuda.is_available():
                raise TrialSkip("the submission needs a CUDA device; torch sees none")
        case = os.path.join(args.dir, "case")
        alpha1, alpha2 = read_alphas(case)
        if (alpha1, alpha2) != (1.0, 1.0):
            raise TrialSkip("GPU MODE's custom_kernel(data) carries no global scales; this case has alpha1=%g alpha2=%g"
                            % (alpha1, alpha2))
        state.update(np=np, torch=torch, arrays=load_arrays(case, np, True), chosen=chosen,
                     own=[t for t in chosen if t in own])

    try:
        ch.stage("setup", setup)
    except TrialSkip as e:
        ch.send("skip", str(e))
        return
    np, torch, chosen = state["np"], state["torch"], state["chosen"]

    os.environ["NVFP4_TOGGLES"] = "+".join(state["own"])
    kernel = ch.stage("load", lambda: import_submission(args.submission))

    def init():
        inputs = Inputs(np, state["arrays"], torch)
        fn = kernel
        if "compile" in chosen or "max-autotune" in chosen:
            fn = torch.compile(kernel, mode="max-autotune" if "max-autotune" in chosen else "default")
        return inputs, inputs.data(), fn

    inputs, data, fn = ch.stage("init", init)
    sync = (lambda: torch.cuda.synchronize()) if torch is not None else (lambda: None)
    ch.send("describe", "python submission %s (%s data), toggles %s"
            % (os.path.basename(args.submission), "torch" if torch is not None else "numpy", "+".join(chosen) or "plain"))

    def calls(n):
        for _ in range(n):
            fn(data)
        sync()

    if "compile" in chosen or "max-autotune" in chosen:
        ch.stage("tune", lambda: calls(1))
    ch.stage("warmup", lambda: calls(args.warmup))

    call = lambda: fn(data)
    if "graph" in chosen:
        def capture():
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                captured = fn(data)
            sync()
            return graph, captured
        graph, captured = ch.stage("capture", capture)

        def call():
            graph.replay()
            return captured

    def run():
        for i in range(args.runs):
            fresh = os.path.join(args.dir, "call%d" % i)
            if os.path.isdir(fresh):
                inputs.update(load_arrays(fresh, np, False))
                sync()
            inputs.poison()
            sync()
            out = call()
            sync()
            bits = inputs.output_bits(out)
            with open(os.path.join(args.dir, "out%d.f16" % i), "wb") as f:
                f.write(bits.tobytes())
            set_file = os.path.join(fresh, "set")
            if os.path.isfile(set_file):  # the harness names the input set it wrote for this call
                with open(set_file) as f:
                    ch.send("output", str(i), f.read().strip())
            else:
                ch.send("output", str(i))

    ch.stage("run", run)
    ch.stage("teardown", lambda: state.clear())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("describe")
    d.add_argument("submission")
    r = sub.add_parser("run")
    r.add_argument("--fd", type=int, required=True)
    r.add_argument("--dir", required=True)
    r.add_argument("--submission", required=True)
    r.add_argument("--toggles", default="plain")
    r.add_argument("--warmup", type=int, default=3)
    r.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)

    if args.command == "describe":
        try:
            own, data_kind = read_declarations(args.submission)
        except TrialError as e:
            print(str(e), file=sys.stderr)
            return 2
        stages = dict(PROVIDED)
        stages.update({t: [] for t in own})
        torch = importlib.util.find_spec("torch") is not None  # importable, found without importing it
        print(json.dumps({"toggles": own, "provided": sorted(PROVIDED), "stages": stages, "data": data_kind,
                          "torch": torch}))
        return 0

    try:
        os.setpgid(0, 0)  # own process group: the parent kills the whole group on a timeout
    except OSError:
        pass
    ch = Channel(args.fd)
    try:
        run_trial(ch, args)
        ch.send("done")
    except TrialError as e:
        ch.send("error", str(e))
    except Exception as e:
        traceback.print_exc()
        ch.send("error", "%s: %s" % (type(e).__name__, e))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # like the C++ child: no interpreter teardown (CUDA, compile workers) inside the trial


if __name__ == "__main__":
    sys.exit(main())
