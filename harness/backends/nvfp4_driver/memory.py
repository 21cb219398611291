"""The memory a submission holds across its calls (submission_driver.py, stage run, after the later
calls; docs/gpu-mode.md "Memory held across calls").

A kernel that keeps something of every call (each output in a list, a CUDA graph captured per call,
a dict keyed by a per-call value) passes every check of a trial's few calls and runs out of memory
after thousands of them: GPU MODE's leaderboard mode makes up to 1000 timed repeats of 50 calls per
case, and an engine never stops calling. The driver makes more calls of the trial's shape and reads,
before and after each window of WINDOW_CALLS calls, the memory the process holds:

  host    the Python heap as tracemalloc traces it. Every Python object is there, and numpy reports
          its array buffers to tracemalloc, so a numpy submission's kept outputs count to the byte.
          The process's resident size is not used: the C allocator keeps freed pages and grows in
          arenas, so its steps are megabytes whatever the submission keeps, far above the bytes per
          call that matter here. Not seen: memory a C extension allocates without telling
          tracemalloc (torch's CPU tensors, another library's buffers).
  device  with torch: torch.cuda.memory_allocated() after a device-wide synchronize: what the CUDA
          caching allocator has handed out to live tensors, in blocks of at least 512 bytes.
  reserved  with torch: torch.cuda.memory_reserved(), the allocator's segments: blocks cached for
          reuse, and the private pool of each captured CUDA graph, which keeps its segments for
          its replays after the capture's tensors are freed (a graph captured per call grows this,
          not memory_allocated). In a steady state the cache is reused and this holds still.
  Not seen: memory allocated past torch's allocator (cudaMalloc from an extension, another
  library's pool).

Tracing. tracemalloc records every allocation while it traces, which slows allocation-heavy Python
code, so it runs only in stage run (from the first checked call: the driver's Meter is started
there), whose seconds are no measurement, and it is stopped before the bench's stage time: no timed
call runs under it. It sees only what is allocated while it traces: a cache filled during the
warm-up and evicting those entries in the windows would look like growth, so tracing starts a
trial's checked and later calls (11 by default) before the windows. For a while after tracing
starts, CPython itself holds a little more with some calls and then stops (each text-mode open(),
about 67 bytes each for its first few dozen: measured on CPython 3.11): the reason for the long
horizon of the verdict below. Each reading synchronizes the device first (queued work may hold host
objects, and torch frees a block used on another stream only once that stream has passed it), then
runs gc.collect(), so that garbage in reference cycles counts as freed, as it would be eventually. A
window of no calls, read first, gives the driver's own residue (its readings' objects), subtracted
from every window.

The calls, each on a `data` object of newly allocated tensors holding the warm-up's input set, all
made before the first reading and alive to the end of the phase, so no address or id() is reused
(objects made between windows would leave the allocators' caches, numpy's for small buffers among
them, to settle in the next calls: a hundred bytes or so per object that are not the submission's):

  warm    WARM_CALLS calls on new objects, not measured: what the first sight of a new object costs
          once (a lazily built table, a workspace) settles here.
  new     up to WINDOWS windows, each on objects not handed before.
  again   up to WINDOWS windows on the objects of `new` again, in turn.

A kind of memory grows in a window when it holds at least MIN_BYTES_PER_CALL more per call of the
window at its end than at its start. A phase stops at its first window in which no kind grows, so a
submission that holds nothing more costs WARM_CALLS + 2 * WINDOW_CALLS calls, one that grows
MAX_CALLS. Something bounded stops growing once full: a workspace or plan per shape, lazy
initialization, a cache of a few entries, the interpreter's own settling.

  MEMORY_GROWS       a FAIL (harness/backends/external.hpp kMemoryGrowthNote): one kind grew in
                     every window of both phases, 2 * WINDOWS * WINDOW_CALLS calls in a row, on
                     objects new and seen: memory kept per call whatever the inputs, which every
                     caller that keeps calling runs out of.
  MEMORY_PER_OBJECT  a note, not a verdict (kMemoryPerObjectNote): one kind grew in every window of
                     `new` by at least PER_OBJECT_BYTES per object, and not in the first window of
                     `again`: an entry per input object (a cache keyed by id() or data_ptr() never
                     evicted). It grows with every distinct `data` a caller hands it, without end for
                     one that allocates per call, but it is bounded for an engine that reuses its
                     buffers and for GPU MODE's benchmark, which calls the same 50 objects in every
                     repeat. Its host bound is higher than a call's: without the `again` phase to
                     confirm it, CPython's settling above must not pass for it.
Either way, something bounded only by a capacity above the calls measured looks the same; the note
names the calls.

MIN_BYTES_PER_CALL is below anything a per-call copy of an output costs, on the smallest case
(1x1x16x4: 8 bytes of data): with the array object and its list entry, about 160 bytes of Python heap
per call measured; a torch allocation is at least 512 bytes of device memory. It is above what a
per-call float appended to a list costs (32 bytes), which would take tens of millions of calls to
matter.
"""
# Bound at import, like the driver's clock: a submission that patches gc or tracemalloc changes its
# own calls, not the driver's readings.
from gc import collect as _collect
from tracemalloc import get_traced_memory as _traced, is_tracing as _is_tracing
from tracemalloc import start as _start, stop as _stop

# A note holding this is a FAIL (harness/backends/external.hpp kMemoryGrowthNote).
MEMORY_GROWS = "memory held grows with every call"
# A note holding this is reported, not judged (external.hpp kMemoryPerObjectNote; report.cpp).
MEMORY_PER_OBJECT = "memory held grows with each new input object"

WARM_CALLS = 2
WINDOWS = 8
WINDOW_CALLS = 2
MIN_BYTES_PER_CALL = 64
PER_OBJECT_BYTES = {"host": 256}  # (module docstring; the device kinds: MIN_BYTES_PER_CALL)
MAX_CALLS = WARM_CALLS + 2 * WINDOWS * WINDOW_CALLS  # a phase that never stops early

KINDS = (("host", "host memory (the Python heap, numpy's arrays included; tracemalloc)"),
         ("device", "device memory (torch.cuda.memory_allocated)"),
         ("reserved", "device memory reserved (torch.cuda.memory_reserved: the allocator's segments, CUDA graphs' "
                      "pools included)"))


class Meter:
    """The bytes the process holds now, per kind: {"host": ..., "device": ..., "reserved": ...}, the
    device kinds only with `device`, {kind: reader} of functions bound before the submission's
    import (inputs.BoundCuda.memory_readers), and `synchronize`. Traces the host heap from start()
    to stop(); a tracemalloc the process already ran is left running."""

    def __init__(self, synchronize=None, device=None):
        self.synchronize, self.device = synchronize, dict(device or {})
        self.started = False

    def start(self):
        if not _is_tracing():
            _start()
            self.started = True

    def stop(self):
        if self.started:
            _stop()
            self.started = False

    def read(self):
        # The device first: work still queued may hold host objects (and torch frees a block used on
        # another stream only once that stream has passed it) until it completes.
        if self.device:
            self.synchronize()
        _collect()
        held = {"host": _traced()[0]}
        for kind, reader in self.device.items():
            held[kind] = int(reader())
        return held


def grown(window, least=None):
    """The kinds of memory that grew in `window` ({kind: bytes}) by at least MIN_BYTES_PER_CALL per
    call, or least[kind]."""
    return {k for k, v in window.items() if v >= (least or {}).get(k, MIN_BYTES_PER_CALL) * WINDOW_CALLS}


def growth(windows, least=None):
    """{kind: mean bytes per call} for each kind that grew (grown) in every one of WINDOWS `windows`;
    {} when fewer windows ran (the phase stopped at one without growth)."""
    if len(windows) < WINDOWS:
        return {}
    kinds = set.intersection(*(grown(w, least) for w in windows))
    return {k: sum(w[k] for w in windows) / (len(windows) * WINDOW_CALLS) for k in kinds}


def measure(call, make, meter):
    """Runs the phase (module docstring): call(target) on targets make() builds; returns (new,
    again), each the list of the windows it ran, {kind: bytes held at the window's end minus at its
    start}, the driver's residue subtracted. The caller traces (meter.start) around it."""
    def window(targets):
        before = meter.read()
        for target in targets:
            call(target)  # the output is dropped at once: the driver keeps nothing per call
        after = meter.read()
        return {k: after[k] - before[k] for k in after}

    pool = [make() for _ in range(WARM_CALLS + WINDOWS * WINDOW_CALLS)]
    residue = window([])
    for target in pool[:WARM_CALLS]:
        call(target)
    seen, new, again = [], [], []
    while len(new) < WINDOWS:
        targets = pool[WARM_CALLS + len(seen):WARM_CALLS + len(seen) + WINDOW_CALLS]
        seen += targets
        new.append({k: v - residue[k] for k, v in window(targets).items()})
        if not grown(new[-1]):
            break
    while len(again) < WINDOWS:
        at = len(again) * WINDOW_CALLS
        again.append({k: v - residue[k] for k, v in window([seen[(at + i) % len(seen)]
                                                             for i in range(WINDOW_CALLS)]).items()})
        if not grown(again[-1]):
            break
    return new, again


def _amounts(kinds, unit):
    return " and ".join("%d bytes per %s of %s" % (round(kinds[k]), unit, text) for k, text in KINDS if k in kinds)


def notes(new, again, first_call):
    """The note the phase gives, as a list of none or one text; `first_call`: the trial's number of
    the phase's first call (module docstring: MEMORY_GROWS, MEMORY_PER_OBJECT)."""
    new_from = first_call + WARM_CALLS
    again_from = new_from + len(new) * WINDOW_CALLS
    last = again_from + len(again) * WINDOW_CALLS - 1
    kept = {k: v for k, v in growth(again).items() if k in growth(new)}
    if kept:
        return ["calls %d-%d (%d windows of %d calls, on new `data` objects, then on the same objects again): %s: %s: "
                "custom_kernel keeps something of every call (each output, a CUDA graph captured per call); a caller "
                "that keeps calling runs out of memory"
                % (new_from, last, 2 * WINDOWS, WINDOW_CALLS, MEMORY_GROWS, _amounts(kept, "call"))]
    per_object = growth(new, PER_OBJECT_BYTES)
    if per_object and not grown(again[0]):
        return ["calls %d-%d (%d windows of %d calls, each on a `data` object of new tensors): %s: %s, none when "
                "the same objects were handed again (calls %d-%d): a cache keyed by id() or data_ptr() that is "
                "never evicted? It grows with every distinct `data` a caller hands it (without end for a caller "
                "that allocates per call); not a verdict"
                % (new_from, again_from - 1, WINDOWS, WINDOW_CALLS, MEMORY_PER_OBJECT, _amounts(per_object, "object"),
                   again_from, last)]
    return []
