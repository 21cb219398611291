#!/usr/bin/env python3
"""submission_driver.py - runs a GPU MODE style Python submission as one harness trial (docs/design.md §3, §4).

The harness starts this program as a trial's child process, in place of its own binary, and reads
the same messages from it as from a built-in path's child (harness/trial/trial.hpp): one line per message
on the pipe descriptor --fd, fields separated by tabs, backslash, tab and newline escaped:

    enter STAGE | leave STAGE SECONDS | describe TEXT | note TEXT | skip REASON | error MESSAGE
    | output CALL [SET] | late-output INDEX SET CALL | timed-output INDEX SET | timing REPS MEDIAN MIN MEAN STDEV RSE B2B B2B_CALLS
    | done

Usage:
    submission_driver.py describe FILE.py
        One JSON line, without importing FILE.py: {"toggles": [...the submission's own...],
        "provided": [...], "stages": {toggle: [extra stages]}, "data": "torch"|"numpy",
        "alphas": NVFP4_ALPHAS, "torch": whether torch is importable here, "custom_kernel": whether
        the module binds custom_kernel (null: cannot be told without running it)}.
    submission_driver.py run --fd FD --dir DIR --submission FILE.py [--toggles COMBO]
                             [--warmup N] [--runs R] [--bench [--bench-rse X] [--bench-max-time S]
                             [--bench-min-reps N] [--bench-max-reps N]] [--emulate-fp4 auto|on|off]
    submission_driver.py task FILE.json
        The task description checked (nvfp4_driver/rehearse.py load_task): one JSON line, or the
        reason on stderr and exit 2.
    submission_driver.py rehearse --fd FD --dir DIR --submission FILE.py --task FILE.json
                                  --mode test|benchmark|leaderboard [--secret-seed N] [--toggles COMBO]
                                  [--emulate-fp4 auto|on|off]
        One of GPU MODE's evaluator modes (nvfp4_driver/rehearse.py), for `harness rehearse gpumode`:
        stages setup, load (the import), then per case run (data, checked calls, check) and time
        (the timed repeats), or warmup (a warm-up benchmark whose result the evaluator discards);
        the mode's account in DIR/rehearse.json. Only the submission's own toggles: the evaluator
        calls custom_kernel as the module defines it.
    submission_driver.py compile-run --fd FD --submission FILE.py [--toggles COMBO] [--emulate-fp4 M]
        kernelbot's "compile" run before each mode: the file run as a script (`python3
        submission.py`, run_eval.py:737-764), in stage load.

--emulate-fp4 (torch submissions): before the import, nvfp4_driver/emulate_fp4.py's install(MODE)
puts an FP4 emulation of torch._scaled_mm in place when the device has no FP4 tensor cores (auto),
always (on) or never (off); its notice is sent as a note, and the describe text (and the
rehearsal's account) says "emulated FP4", so that no time measured under it passes for a B200's.
Where that module is missing, auto and off run without it and on is an error.

Stages of `run`, each timed between its enter and leave messages:
    setup    (the driver's own work) read the case, check the chosen toggles, the data kind
    load     import FILE.py with NVFP4_TOGGLES set: import-time work is timed here
    init     build `data` (uploads to the GPU), wrap custom_kernel (torch.compile when asked)
    tune     only with compile / max-autotune: the first call, which compiles
    warmup   N calls
    capture  only with graph: one call captured in a torch.cuda.CUDAGraph
    run      R checked calls, each handed its inputs one of two ways (below); output poisoned
             (the last call's starts from the previous call's output instead), call, output read
             back and written; then (not under graph) LATE_CALLS more calls on the warm-up's set
             in new tensors, their distinct outputs sent for checking, and every checked output
             read again (a changed one: a note carrying a FAIL; later_calls)
    time     only with --bench: the steady state timed per call and back to back on distinct `data`
             objects, timed outputs sent for checking (nvfp4_driver/bench.py; inputs DIR/bench<k>/)
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
                    call replays it, new tensors' contents copied into the captured ones first
                    (adds stage capture)
    the submission's own: the names in a module-level literal list NVFP4_TOGGLES = ["a", "b"],
      read with `ast` (no import). The chosen ones reach the submission before import through the
      environment variable NVFP4_TOGGLES ('+'-joined, "" when none), so import-time behaviour can
      depend on them. Names: lower-case letters, digits, '-', '_'; not a provided name.
    NVFP4_DATA = "numpy" (a module-level literal) asks for numpy arrays on the CPU instead of torch
      tensors (what CI runs, without torch); the provided toggles need torch and are SKIP then.
    NVFP4_ALPHAS = True (a module-level literal) says the submission takes the global scales:
      `data` then ends with alpha1, alpha2 (below). Without it, GPU MODE's convention: no alphas;
      a case whose alphas are not 1 is SKIP, and new weights come with alphas 1.

Inputs, in the trial directory DIR (written by the harness):
    DIR/case/       a.npy b1.npy b2.npy sfa.npy sfb1.npy sfb2.npy, uint8, batch-first (L, rows, cols)
                    or 2-D for L = 1 (reference/case_dir.hpp); alphas.json {"alpha1": x, "alpha2": y}
                    optional. The warm-up's input set: init, tune, warm-up and capture see it.
    DIR/call<i>/    optional, before checked call i (0-based): the input set of that call; a file
                    `set` holds the harness's number of that set, echoed in the call's `output`
                    message; a file `call` says how the call is handed it (external.hpp,
                    SubmissionCall):
                      in-place activations  A and SFA copied into the warm-up's tensors: the same
                                            `data` object, the same addresses (an engine; a
                                            captured graph sees the new values)
                      in-place all          every array (and the alphas) copied the same way
                      new                   a new `data` tuple of newly allocated tensors holding
                                            the whole set, weights and scales included (GPU MODE's
                                            evaluator builds one per call); earlier tensors stay
                                            alive, so no address or id() is reused in a trial
                    Without a `call` file, the arrays present are copied in place.
    DIR/bench<k>/   only with --bench: input set k < R in the trial's own mode (set R is case/).
Outputs: DIR/out<i>.f16, the output of checked call i as L*M*N fp16 bit patterns in (L, M, N) order.

Every call but the last starts from the poisoned output (an element left unwritten is named); the
last starts from the previous call's output, so a submission that computes only when it sees the
poison returns a stale output. The driver's writes (inputs, poison) are complete, device-wide,
before each call. With torch each output is read twice: by a copy ordered on the calling stream
(no device-wide synchronize first), then after torch.cuda.synchronize(); the first is the one
written. If they differ, the driver sends a note naming the call and "output not complete when the
calling stream reached it: work on another stream not joined?", which the harness turns into a FAIL.
After each checked call every tensor of `data` but c must still hold what the driver put there (the
tensors the submission was handed; under the driver's graph, the captured ones); otherwise the note
names the call, "the inputs it was handed were changed" and each changed tensor: a FAIL too. So is a current CUDA stream other than the caller's (the default
stream) after the import or a call: "the current CUDA stream was left changed"; the driver makes the
default stream current again, and reads and times on it whatever stream is current. Process-wide
numeric settings the import or a checked call changes (numpy's error handling; torch's TF32 and
reduced-precision flags, float32 matmul precision, default dtype, deterministic algorithms, grad mode)
are a note naming each, "changed process-wide settings", which the summary lists: not a verdict.

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
    alpha1, alpha2  only with NVFP4_ALPHAS = True: float32 tensors of shape (1,) on the GPU,
                  refilled in place like the inputs (a captured graph sees new values);
                  C = silu(alpha1 * A B1^T) * (alpha2 * A B2^T).
custom_kernel returns a float16 tensor of shape (M, N, L); element [m, n, l] is C[l][m][n].
With NVFP4_DATA = "numpy" the same ten, as numpy views with the same shapes: uint8 for the FP4 and
FP8 ones (numpy has no such dtypes; the bytes are the same), float16 for c.
"""
import argparse
import importlib.util
import json
import os
import sys
import traceback
import types
from time import perf_counter as _clock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nvfp4_driver.bench import time_stage  # noqa: E402
from nvfp4_driver.inputs import (ACTIVATIONS, INPUTS_CHANGED, OUTPUT_REUSED, SETTINGS_CHANGED, STREAM_CHANGED,  # noqa: E402
                                 BoundCuda, Inputs, ReadBack, load_arrays, process_settings, read_alphas,
                                 read_call_kind, settings_changes)
from nvfp4_driver.protocol import (PROVIDED, Channel, TrialError, TrialSkip, parse_combo,  # noqa: E402
                                   read_declarations)
from nvfp4_driver import rehearse as evaluator  # noqa: E402

del sys.path[0]

# Calls after the checked ones (later_calls): with the default 3 warm-up and 3 checked calls, calls
# 7-14 of the trial, enough to meet a path taken after 6 calls or every 7th.
LATE_CALLS = 8


def provide_task_module(folder):
    """GPU MODE's `task` module (input_t, output_t), which submissions import, when `folder` has none."""
    if "task" not in sys.modules and not os.path.exists(os.path.join(folder, "task.py")):
        task = types.ModuleType("task")
        task.input_t, task.output_t = tuple, object
        sys.modules["task"] = task


class ImportDeath(TrialError):
    """The import raised a BaseException that is not an Exception (SystemExit, KeyboardInterrupt):
    in GPU MODE's evaluator the import runs in the pool worker, which such an exception ends."""


def import_submission(path):
    """Imports FILE.py as module `submission`; GPU MODE's `task` module is provided when absent.
    TrialError with the reason when the import raises (ImportDeath for a BaseException that is
    not an Exception) or leaves no callable custom_kernel."""
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    provide_task_module(folder)
    spec = importlib.util.spec_from_file_location("submission", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # SystemExit included: an import must not end the trial silently
        traceback.print_exc()
        message = "exception at import of %s: %s: %s" % (path, type(e).__name__, e)
        raise (TrialError if isinstance(e, Exception) else ImportDeath)(message)
    if not hasattr(module, "custom_kernel"):
        raise TrialError("submission %s defines no custom_kernel(data)" % path)
    kernel = module.custom_kernel
    if not callable(kernel):
        raise TrialError("submission %s: custom_kernel is a %s after the import, not a function"
                         % (path, type(kernel).__name__))
    return kernel


def install_emulation(mode):
    """(notice or None, installed): nvfp4_driver.emulate_fp4.install(mode) when that module exists.
    A missing module (or one that cannot be imported here) means no emulation: TrialError for "on".
    An install that fails (a torch without float4_e2m1fn_x2 or torch.library.get_kernel: a
    RuntimeError) is a TrialError for "on"; for "auto" the submission runs without the emulation,
    and the notice (sent as a note) says why."""
    try:
        emulate_fp4 = importlib.import_module("nvfp4_driver.emulate_fp4")
    except ImportError as e:
        if mode == "on":
            raise TrialError("--emulate-fp4 on: the FP4 emulation is unavailable here (%s)" % e)
        return None, False
    try:
        notice = emulate_fp4.install(mode)
    except RuntimeError as e:
        if mode == "on":
            raise TrialError("--emulate-fp4 on: the FP4 emulation cannot be installed: %s" % e)
        return ("FP4 emulation not installed (--emulate-fp4 auto): %s; torch._scaled_mm runs as this torch has it"
                % e), False
    return notice, bool(emulate_fp4.installed())


def emulation_used():
    """Whether the installed emulation has run a call (a submission that never calls
    torch._scaled_mm on FP4, e.g. one that decodes FP4 itself, was timed on its own kernels)."""
    module = sys.modules.get("nvfp4_driver.emulate_fp4")
    return bool(module is not None and module.installed() and module.emulated_calls() > 0)


def folder_alphas(folder, takes_alphas):
    """The alphas of the input set in `folder` for a submission that takes them, else None (and a
    set with alphas other than 1 cannot be handed to it)."""
    alphas = read_alphas(folder)
    if takes_alphas:
        return alphas
    if alphas != (1.0, 1.0):
        raise TrialSkip("GPU MODE's custom_kernel(data) carries no global scales (declare NVFP4_ALPHAS = True "
                        "to take them); this input set has alpha1=%g alpha2=%g" % alphas)
    return None


def call_text(kind, folder):
    """How a call was handed its inputs, for a note: "new tensors, input set 1"."""
    set_file = os.path.join(folder, "set")
    which = ""
    if os.path.isfile(set_file):
        with open(set_file) as f:
            which = ", input set " + f.read().strip()
    return ("new tensors" if kind == "new" else "in place") + which


def run_trial(ch, args):
    state = {"emulated": False}

    def setup():
        decl = read_declarations(args.submission)
        chosen = parse_combo(args.toggles)
        unknown = [t for t in chosen if t not in PROVIDED and t not in decl.toggles]
        if unknown:
            raise TrialError("unknown toggle %s (provided: %s; the submission's: %s)"
                             % (", ".join(unknown), ", ".join(sorted(PROVIDED)), ", ".join(decl.toggles) or "none"))
        provided = [t for t in chosen if t in PROVIDED]
        import numpy as np
        torch = None
        if decl.data == "numpy":
            if provided:
                raise TrialSkip("toggle %s needs torch; this submission asks for numpy data" % "+".join(provided))
        else:
            try:
                import torch
            except ImportError as e:
                raise TrialSkip("the submission needs torch: %s" % e)
            if not torch.cuda.is_available():
                raise TrialSkip("the submission needs a CUDA device; torch sees none")
            notice, state["emulated"] = install_emulation(args.emulate_fp4)
            if notice:
                ch.send("note", notice)
            state["cuda"] = BoundCuda(torch)
        case = os.path.join(args.dir, "case")
        state.update(np=np, torch=torch, arrays=load_arrays(case, np, True), chosen=chosen, decl=decl,
                     alphas=folder_alphas(case, decl.alphas), own=[t for t in chosen if t in decl.toggles])
        state["settings"] = process_settings(np, torch)  # before the import

    try:
        ch.stage("setup", setup)
    except TrialSkip as e:
        ch.send("skip", str(e))
        return
    np, torch, chosen, decl = state["np"], state["torch"], state["chosen"], state["decl"]

    os.environ["NVFP4_TOGGLES"] = "+".join(state["own"])
    emulated = state["emulated"]
    kernel = ch.stage("load", lambda: import_submission(args.submission))

    def restore_stream(what, quiet=False):
        """A note naming `what` (unless quiet) when the current stream is not the caller's any more,
        which is then made current again: the driver's own work and every call start on the caller's
        stream. Whether it was changed."""
        cuda = state.get("cuda")
        if cuda is not None and cuda.current_stream() != cuda.default_stream():
            if not quiet:
                ch.send("note", "%s: %s: custom_kernel's work or the caller's next work runs on another stream "
                        "than the caller's (torch.cuda.set_stream without restoring it?)" % (what, STREAM_CHANGED))
            cuda.set_stream(cuda.default_stream())
            return True
        return False

    def watch_settings(what):
        """A note when the process-wide settings differ from the last look (kept for the next); each
        distinct change once per trial, so a setting flipped on every call cannot crowd out notes
        that carry a verdict."""
        now = process_settings(np, torch)
        reported = state.setdefault("reported", set())
        changes = [c for c in settings_changes(state["settings"], now) if c not in reported]
        if changes:
            reported.update(changes)
            ch.send("note", "%s: %s: %s" % (what, SETTINGS_CHANGED, "; ".join(changes)))
        state["settings"] = now

    def init():
        watch_settings("the import")
        restore_stream("the import")  # here, not between the stages: it may create the CUDA context
        inputs = Inputs(np, state["arrays"], torch, state["alphas"])
        reader = ReadBack(np, (inputs.L, inputs.M, inputs.N), torch, state.get("cuda"))
        fn = kernel
        if "compile" in chosen or "max-autotune" in chosen:
            fn = torch.compile(kernel, mode="max-autotune" if "max-autotune" in chosen else "default")
        return inputs, reader, fn

    inputs, reader, fn = ch.stage("init", init)
    sync = state["cuda"].synchronize if torch is not None else (lambda: None)


    def describe(emulated):
        ch.send("describe", "python submission %s (%s data%s%s), toggles %s"
                % (os.path.basename(args.submission), "torch" if torch is not None else "numpy",
                   ", alphas" if decl.alphas else "", ", emulated FP4" if emulated else "",
                   "+".join(chosen) or "plain"))
    describe(emulated)

    def calls(n):
        for _ in range(n):
            fn(inputs.data)
        sync()

    if "compile" in chosen or "max-autotune" in chosen:
        ch.stage("tune", lambda: calls(1))
    ch.stage("warmup", lambda: calls(args.warmup))
    watch_settings("the warm-up" + (" (torch.compile included)" if "compile" in chosen or "max-autotune" in chosen
                                     else ""))

    call = lambda target: fn(target.data)
    if "graph" in chosen:
        # The driver's own graph is captured over buffers of its own (an engine's static buffers):
        # every call copies all of its inputs into them, whether it came in place or in new tensors,
        # so a call in new tensors leaves nothing behind for a later in-place call.
        static = inputs.clone()

        def capture():
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                captured = fn(static.data)
            sync()
            return graph, captured
        graph, captured = ch.stage("capture", capture)

        def call(target):
            static.copy_from(target)
            graph.replay()
            return captured

    def read_back(out, what, quiet=False):
        """The output read on the calling stream and after a device-wide synchronize, and how many
        elements differ between the two reads (work on another stream still writing it: a note naming
        `what`, unless quiet)."""
        ordered, synced = reader.read(out)
        differ = int(np.count_nonzero(ordered != synced))
        if differ and not quiet:
            ch.send("note", "%s: output not complete when the calling stream reached it: work on another stream "
                    "not joined? (%d of %d elements changed after a device-wide synchronize)"
                    % (what, differ, ordered.size))
        return ordered, synced, differ

    def run():
        handed = [inputs]  # every Inputs of the trial stays alive: no address or id() is reused
        previous = None
        kept = []  # (what, output, its bits read after its call, the Inputs the call was handed)
        for i in range(args.runs):
            folder = os.path.join(args.dir, "call%d" % i)
            kind = read_call_kind(folder) if os.path.isdir(folder) else None
            target = inputs
            if kind == "new":
                target = Inputs(np, load_arrays(folder, np, True), torch, folder_alphas(folder, decl.alphas))
                handed.append(target)
            elif os.path.isdir(folder):
                arrays = load_arrays(folder, np, kind is not None)
                if kind == "in-place activations":
                    arrays = {k: v for k, v in arrays.items() if k in ACTIVATIONS}
                inputs.update(arrays, folder_alphas(folder, decl.alphas))
            if args.runs > 1 and i == args.runs - 1:
                target.set_output_bits(previous)  # the last call starts from the previous output
            else:
                target.poison()
            sync()
            out = call(target)
            target.check_output(out)
            what = "call %d (%s)" % (i + 1, call_text(kind, folder))
            ordered, synced, _ = read_back(out, what)
            previous = synced
            restore_stream(what)
            watch_settings(what)
            changed = (static if "graph" in chosen else target).changed_inputs()
            if changed:
                ch.send("note", "%s: %s: %s" % (what, INPUTS_CHANGED, ", ".join(changed)))
            kept.append((what, out, synced.copy(), target))  # (numpy: `synced` may be a view of out)
            with open(os.path.join(args.dir, "out%d.f16" % i), "wb") as f:
                f.write(ordered.tobytes())
            set_file = os.path.join(folder, "set")
            if os.path.isfile(set_file):  # the harness names the input set it wrote for this call
                with open(set_file) as f:
                    ch.send("output", str(i), f.read().strip())
            else:
                ch.send("output", str(i))
        if "graph" not in chosen:  # (the driver's own graph returns its one static output every call)
            later_calls(kept)

    def later_calls(kept):
        """LATE_CALLS more calls after the checked ones, in new tensors holding the warm-up's input set
        (made once; every call poisons its output and refills its inputs, which are checked after it
        as a checked call's are): the first call's output and every later one that differs from it are
        sent for checking (a path taken only after more calls). The middle one is, where the harness
        wrote DIR/other and the driver does not compile (a recompile and autotune for the other K
        would eat the run budget), a call of another shape (K + 256; set -1), also sent; an exception
        there is a note, not a verdict (a kernel may support only the shapes it was tuned for).
        Then, unless the driver's own CUDA graphs hold the outputs (graph, max-autotune), every checked
        call's output is read again (a caller may keep its outputs: GPU MODE's evaluator checks them
        after all its calls); one that changed is a note carrying a FAIL. Skipped there: an output in
        the c of a set a later checked call was handed in place (the driver rewrites that c first)."""
        compiled = "compile" in chosen or "max-autotune" in chosen
        extra = Inputs(np, state["arrays"], torch, state["alphas"])
        other_dir = os.path.join(args.dir, "other")  # another shape, K + 256 (external.cpp), if any
        first, sent, noted = None, 0, set()  # (each kind of note once over these calls)
        made = args.warmup + args.runs + (1 if compiled else 0)
        for j in range(LATE_CALLS):
            other = j == LATE_CALLS // 2 and os.path.isdir(other_dir) and not compiled
            what = "call %d (new tensors, %s)" % (made + j + 1, "another shape" if other else "the warm-up's input set")
            if other:
                target = Inputs(np, load_arrays(other_dir, np, True), torch, folder_alphas(other_dir, decl.alphas))
            else:
                target = extra
                extra.update(state["arrays"], state["alphas"])
            target.poison()
            sync()
            try:
                out = fn(target.data)
                target.check_output(out)
            except Exception as e:
                if not other:
                    raise TrialError("%s: %s: %s" % (what, type(e).__name__, e)) from e
                ch.send("note", "%s: raised %s: %s (the other shape is not checked)"
                        % (what, type(e).__name__, str(e).splitlines()[0][:300] if str(e) else ""))
                restore_stream(what, quiet=True)
                continue
            ordered, _, differ = read_back(out, what, quiet="unjoined" in noted)
            if differ:
                noted.add("unjoined")
            if restore_stream(what, quiet="stream" in noted):
                noted.add("stream")
            changed = target.changed_inputs()
            if changed and "inputs" not in noted:
                noted.add("inputs")
                ch.send("note", "%s: %s: %s" % (what, INPUTS_CHANGED, ", ".join(changed)))
            if other or first is None or not np.array_equal(ordered, first):
                if first is None and not other:
                    first = ordered.copy()
                with open(os.path.join(args.dir, "late%d.f16" % sent), "wb") as f:
                    f.write(ordered.tobytes())
                ch.send("late-output", str(sent), "-1" if other else str(args.runs), str(made + j + 1))
                sent += 1
        if "max-autotune" in chosen:  # (its CUDA graphs reuse their output memory: the driver's doing)
            return
        changed = []
        for i, (what, out, bits, target) in enumerate(kept):
            try:
                if any(later is target for _, _, _, later in kept[i + 1:]) and target.holds(out):
                    continue
                _, now = reader.read(out)
                n = int(np.count_nonzero(now != bits))
                if n:
                    changed.append("%s, %d of %d elements" % (what, n, bits.size))
            except Exception as e:  # e.g. torch refusing to read a CUDA graph output it has overwritten
                changed.append("%s, reading it again raised %s: %s"
                               % (what, type(e).__name__, str(e).splitlines()[0][:200] if str(e) else ""))
        if changed:
            shown = changed[:4] + (["and %d more calls" % (len(changed) - 4)] if len(changed) > 4 else [])
            ch.send("note", "%s: %s: the output is storage custom_kernel reuses (one buffer returned on every "
                    "call, an earlier call's c used as scratch, a CUDA graph's static output returned); a caller "
                    "keeping its outputs gets later results in earlier ones" % (OUTPUT_REUSED, "; ".join(shown)))

    ch.stage("run", run)

    def write_timed(index, set_number, out):
        inputs.check_output(out)
        ordered, _, _ = read_back(out, "timed output %d (input set %d)" % (index, set_number))
        with open(os.path.join(args.dir, "timed%d.f16" % index), "wb") as f:
            f.write(ordered.tobytes())
        ch.send("timed-output", str(index), str(set_number))

    if args.bench:
        ch.stage("time", lambda: time_stage(ch, args, inputs, call, reader, np, torch,
                                            lambda folder: folder_alphas(folder, decl.alphas), write_timed))
    if emulated:  # the last description holds: labelled emulated only where the emulation ran
        describe(emulation_used())
    ch.stage("teardown", lambda: state.clear())


def own_toggles(args, decl):
    """The submission's own toggles of --toggles; the driver's provided ones are not the evaluator's."""
    chosen = parse_combo(args.toggles)
    bad = [t for t in chosen if t not in decl.toggles]
    if bad:
        raise TrialError("toggle %s is not the submission's own (it declares: %s); the evaluator calls custom_kernel "
                         "as the module defines it" % (", ".join(bad), ", ".join(decl.toggles) or "none"))
    return chosen


def torch_for(decl):
    """torch for a torch submission (TrialSkip when it or a CUDA device is missing); None for numpy data."""
    if decl.data == "numpy":
        return None
    try:
        import torch
    except ImportError as e:
        raise TrialSkip("the submission needs torch: %s" % e)
    if not torch.cuda.is_available():
        raise TrialSkip("the submission needs a CUDA device; torch sees none")
    return torch


def rehearse_mode(ch, args):
    """One evaluator mode (nvfp4_driver/rehearse.py), its account in DIR/rehearse.json."""
    record = evaluator.Record(os.path.join(args.dir, "rehearse.json"),
                              {"mode": args.mode, "secret_seed": args.secret_seed, "stages_s": {}})
    doc = record.doc

    def stage(name, body):
        # stage_t0 (driver clock): with a case's step_t0, the parent charges the time in flight of
        # a killed child to the step it was in (rehearse_report.cpp breakdown).
        t0 = doc["stage_t0"] = _clock()
        record.save()
        try:
            return ch.stage(name, body)
        finally:
            doc["stages_s"][name] = doc["stages_s"].get(name, 0.0) + _clock() - t0

    state = {}

    def setup():
        decl = read_declarations(args.submission)
        state["own"] = own_toggles(args, decl)
        state["task"] = evaluator.load_task(args.task)
        doc["case_counts"] = {"tests": len(state["task"]["tests"]), "benchmarks": len(state["task"]["benchmarks"])}
        import numpy as np
        from nvfp4_driver import gpumode_data
        torch = torch_for(decl)
        doc.update(data=decl.data, emulated_fp4=False, emulation_notice=None)
        if torch is None:
            state["host"] = gpumode_data.NumpyHost(np)
        else:
            notice, doc["emulated_fp4"] = install_emulation(args.emulate_fp4)
            doc["emulation_notice"] = notice
            if notice:
                ch.send("note", notice)
            state["host"] = gpumode_data.TorchHost(np, torch)
            doc["device"] = torch.cuda.get_device_name()
        doc["clock"] = state["host"].clock
        os.environ["NVFP4_TOGGLES"] = "+".join(state["own"])
        os.environ["CUTE_DSL_DISABLE_FILE_CACHING"] = "1"  # as eval_better_bench.py:11 sets it
        record.save()

    try:
        stage("setup", setup)
    except ValueError as e:  # the task file (the parent checks it first; here for a direct run)
        raise TrialError(str(e))
    try:
        kernel = stage("load", lambda: import_submission(args.submission))
    except ImportDeath as e:  # the account tells the parent: the evaluator's worker dies (WOULD TIME OUT)
        doc["worker_dies"] = "%s: %s" % (e, evaluator.WORKER_DIES)
        record.save()
        raise
    ch.send("describe", "python submission %s (%s data%s), toggles %s, evaluator mode %s"
            % (os.path.basename(args.submission), doc["data"], ", emulated FP4" if doc["emulated_fp4"] else "",
               "+".join(state["own"]) or "plain", args.mode))
    try:
        evaluator.run_mode(args.mode, state["host"], kernel, state["task"], record, stage, args.secret_seed)
    except (evaluator.SubmissionError, evaluator.WorkerDeath) as e:  # its traceback is in the log already
        raise TrialError(str(e))
    finally:
        # Labelled emulated only where the emulation ran (a mode cut short keeps the label it had).
        if doc["emulated_fp4"]:
            doc["emulated_fp4"] = emulation_used()
            record.save()
    ch.stage("teardown", lambda: None)


def compile_run(ch, args):
    """kernelbot's "compile" run: the submission executed as a script, in stage load."""
    import runpy

    def setup():
        decl = read_declarations(args.submission)
        os.environ["NVFP4_TOGGLES"] = "+".join(own_toggles(args, decl))
        try:
            torch = torch_for(decl)
        except TrialSkip:
            torch = None  # the script runs anyway: whatever it does is the evaluator's compile run
        if torch is not None:
            notice, _ = install_emulation(args.emulate_fp4)
            if notice:
                ch.send("note", notice)

    ch.stage("setup", setup)
    folder = os.path.dirname(os.path.abspath(args.submission))

    def load():
        sys.path.insert(0, folder)
        provide_task_module(folder)
        try:
            runpy.run_path(args.submission, run_name="__main__")
        except SystemExit as e:
            if e.code not in (None, 0):
                raise TrialError("python3 %s exited with %s" % (args.submission, e.code))
        except BaseException as e:
            traceback.print_exc()
            raise TrialError("python3 %s: %s: %s" % (args.submission, type(e).__name__, e))

    ch.stage("load", load)


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
    r.add_argument("--bench", action="store_true", help="after run, stage time (nvfp4_driver/bench.py)")
    r.add_argument("--bench-rse", type=float, default=0.005)
    r.add_argument("--bench-max-time", type=float, default=2.0)
    r.add_argument("--bench-min-reps", type=int, default=50)
    r.add_argument("--bench-max-reps", type=int, default=5000)
    emulate = dict(choices=("auto", "on", "off"), default="auto")
    r.add_argument("--emulate-fp4", **emulate)
    t = sub.add_parser("task")
    t.add_argument("file")
    e = sub.add_parser("rehearse")
    e.add_argument("--fd", type=int, required=True)
    e.add_argument("--dir", required=True)
    e.add_argument("--submission", required=True)
    e.add_argument("--task", required=True)
    e.add_argument("--mode", choices=evaluator.MODES, required=True)
    e.add_argument("--secret-seed", type=int, default=None)
    e.add_argument("--toggles", default="plain")
    e.add_argument("--emulate-fp4", **emulate)
    c = sub.add_parser("compile-run")
    c.add_argument("--fd", type=int, required=True)
    c.add_argument("--submission", required=True)
    c.add_argument("--toggles", default="plain")
    c.add_argument("--emulate-fp4", **emulate)
    args = parser.parse_args(argv)

    if args.command == "task":
        try:
            print(json.dumps(evaluator.load_task(args.file), allow_nan=False))
        except ValueError as e:
            print(str(e), file=sys.stderr)
            return 2
        return 0

    if args.command == "describe":
        try:
            decl = read_declarations(args.submission)
        except TrialError as e:
            print(str(e), file=sys.stderr)
            return 2
        stages = dict(PROVIDED)
        stages.update({t: [] for t in decl.toggles})
        torch = importlib.util.find_spec("torch") is not None  # importable, found without importing it
        print(json.dumps({"toggles": decl.toggles, "provided": sorted(PROVIDED), "stages": stages, "data": decl.data,
                          "alphas": decl.alphas, "torch": torch, "custom_kernel": decl.kernel}))
        return 0

    try:
        os.setpgid(0, 0)  # own process group: the parent kills the whole group on a timeout
    except OSError:
        pass
    ch = Channel(args.fd)
    body = {"run": run_trial, "rehearse": rehearse_mode, "compile-run": compile_run}[args.command]
    try:
        body(ch, args)
        ch.send("done")
    except TrialSkip as e:
        ch.send("skip", str(e))
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
