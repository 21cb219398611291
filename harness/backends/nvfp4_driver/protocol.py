"""The driver's end of the harness's pipe, and a submission's declarations read without importing it."""
import ast
import os
from time import perf_counter as _clock  # bound at import: patching time.perf_counter later does not change it

PROVIDED = {"compile": ["tune"], "max-autotune": ["tune"], "graph": ["capture"]}
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")
DECLARED = ("NVFP4_TOGGLES", "NVFP4_DATA", "NVFP4_ALPHAS")


class TrialError(Exception):
    """A reason the trial cannot go on, reported as an `error` message."""


class TrialSkip(Exception):
    """A reason the trial cannot run here, reported as a `skip` message."""


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
        """Runs body() as one stage; an exception leaves the stage open (the parent knows where).
        The seconds reported are the driver's own clock, for the report only: the parent keeps its
        own clock for every deadline and verdict."""
        self.send("enter", name)
        t0 = _clock()
        result = body()
        self.send("leave", name, "%.6f" % (_clock() - t0))
        return result


class Declarations:
    """What a submission declares as module-level literals: toggles (NVFP4_TOGGLES), the kind of
    data it takes (NVFP4_DATA, "torch" or "numpy") and whether it takes the global scales
    (NVFP4_ALPHAS = True: `data` gains alpha1 and alpha2); and whether it binds custom_kernel at
    module level (True, False, or None when a star import or dynamic binding leaves it open)."""

    def __init__(self, toggles=(), data="torch", alphas=False, kernel=None):
        self.toggles, self.data, self.alphas, self.kernel = list(toggles), data, alphas, kernel


def binds_custom_kernel(tree):
    """Whether the module binds the name custom_kernel outside any function or class: a def, an
    assignment, an import (statements nested in if/try/with/for/while count). None when it cannot
    be told without running it (a star import, or globals()/setattr/exec anywhere)."""
    name = "custom_kernel"
    open_question = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            open_question = True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "globals", "setattr", "exec", "vars"):
            open_question = True

    def scan(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if node.name == name:
                    return True
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                    return True
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                targets = [node.target]
            for t in targets:
                if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(t)):
                    return True
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list) and scan(inner):
                    return True
        return False

    if scan(tree.body):
        return True
    return None if open_question else False


def read_declarations(path):
    """The submission's Declarations, parsed with ast (nothing runs); TrialError when malformed."""
    if not os.path.isfile(path):
        raise TrialError("submission %s: no such file" % path)
    with open(path, "rb") as f:
        source = f.read()
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as e:
        raise TrialError("submission %s: syntax error at line %s: %s" % (path, e.lineno, e.msg))
    d = Declarations(kernel=binds_custom_kernel(tree))
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if not isinstance(target, ast.Name) or target.id not in DECLARED:
                continue
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                raise TrialError("submission %s: %s must be a literal (line %d)" % (path, target.id, node.lineno))
            if target.id == "NVFP4_DATA":
                if value not in ("torch", "numpy"):
                    raise TrialError("submission %s: NVFP4_DATA must be \"torch\" or \"numpy\"" % path)
                d.data = value
            elif target.id == "NVFP4_ALPHAS":
                if not isinstance(value, bool):
                    raise TrialError("submission %s: NVFP4_ALPHAS must be True or False (line %d)"
                                     % (path, node.lineno))
                d.alphas = value
            else:
                if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                    raise TrialError("submission %s: NVFP4_TOGGLES must be a list of strings" % path)
                d.toggles = list(value)
    for name in d.toggles:
        if not name or set(name) - NAME_CHARS or name == "plain":
            raise TrialError("submission %s: bad toggle name %r (lower-case letters, digits, '-', '_')" % (path, name))
        if name in PROVIDED:
            raise TrialError("submission %s: toggle %r is provided by the harness; choose another name" % (path, name))
    if len(set(d.toggles)) != len(d.toggles):
        raise TrialError("submission %s: a toggle is declared twice in NVFP4_TOGGLES" % path)
    return d


def parse_combo(text):
    if not text or text == "plain":
        return []
    return sorted(set(text.split("+")))
