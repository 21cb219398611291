"""The driver's end of the harness's pipe, and a submission's declarations read without importing it."""
import ast
import os
import stat
import warnings
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


DYNAMIC_CALLS = ("globals", "locals", "vars", "setattr", "exec", "eval", "compile", "__import__")


def dynamic_binding(tree):
    """Whether the module may bind names where ast cannot see them: a star import; a call of
    globals, locals, vars, setattr, exec, eval, compile or __import__ anywhere, by name or as an
    attribute (builtins.exec); a module's __dict__ or sys.modules touched."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return True
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id in DYNAMIC_CALLS) or (
                    isinstance(f, ast.Attribute) and f.attr in DYNAMIC_CALLS):
                return True
        if isinstance(node, ast.Attribute) and node.attr in ("__dict__", "modules"):
            return True
    return False


def mentions(tree, word):
    """Whether `word` is part of any identifier, attribute, alias, keyword or string constant of the
    module (comments are not in the tree)."""
    for node in ast.walk(tree):
        for _, value in ast.iter_fields(node):
            values = value if isinstance(value, list) else [value]
            if any(isinstance(v, str) and word in v for v in values):
                return True
    return False


def binds_custom_kernel(tree):
    """Whether the module binds the name custom_kernel outside any function or class: a def, an
    assignment, an import (statements nested in if/try/with/for/while count): True. False only when
    nothing in the module could bind it: the name appears nowhere (not as a name, an attribute, an
    alias, a `global`, a pattern capture or inside a string), and there is no star import, no
    globals()/setattr/exec/vars call and no module-level __getattr__ (PEP 562). None otherwise:
    only the import can tell (a `with ... as`, a walrus, `global` in a function, a match capture,
    sys.modules[__name__].custom_kernel = ...)."""
    name = "custom_kernel"
    open_question = dynamic_binding(tree) or mentions(tree, name) or any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__getattr__" for n in ast.walk(tree))

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


def file_problem(path):
    """Why `path` cannot be read as a submission, or None: a submission is an existing regular file
    (a directory, FIFO, socket or device is named as such; reading a FIFO would block forever)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "no such file"
    except OSError as e:
        return e.strerror or str(e)
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, not a Python file"
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file")
        return "is %s, not a Python file" % kind
    return None


def parse_source(path, source):
    """The module's ast; TrialError naming what is wrong when it is not Python source. Python
    refuses a NUL byte anywhere in a source file (its SyntaxError carries no line), so that one is
    found and named here first. Warnings the parse draws (an invalid escape such as "\\d" is a
    SyntaxWarning shown by default from Python 3.12) are silenced: they concern the submission's
    code, which its import reports in the trial's log, and on stderr they would corrupt describe's
    one JSON line (the harness reads stdout and stderr together)."""
    nul = source.find(b"\0")
    if nul >= 0:
        raise TrialError("submission %s: contains a NUL byte (line %d, byte %d): not Python source text"
                         % (path, source.count(b"\n", 0, nul) + 1, nul))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source, filename=path)
    except SyntaxError as e:
        where = " at line %d" % e.lineno if isinstance(e.lineno, int) and e.lineno > 0 else ""
        raise TrialError("submission %s: syntax error%s: %s" % (path, where, e.msg))
    except (ValueError, UnicodeDecodeError) as e:  # an undecodable source (older Pythons raise ValueError)
        raise TrialError("submission %s: not Python source text: %s" % (path, e))


class _MayBeCallable(Exception):
    """literal_kernel's early exit: a binding of custom_kernel that may hold a function."""


def _is_literal(value):
    if isinstance(value, ast.JoinedStr):  # an f-string: a str, whatever it formats
        return True
    try:
        ast.literal_eval(value)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def literal_kernel(tree):
    """(line, text) of the first binding when every binding of custom_kernel in the module's scope
    is a plain assignment of a literal (a number, string, bytes, None, True/False, or a tuple, list,
    dict or set of them): at import the name then holds no function, whatever else runs. None when
    nothing binds it, when any binding may hold a function (a def, a class, an import, an
    assignment of any other expression, a loop or `with` target, an unpacking, `:=`, `except ... as`,
    a match capture, `del`), or when it can be rebound where this cannot see (a `global
    custom_kernel` in a function; globals(), setattr, exec, vars or a star import anywhere)."""
    name = "custom_kernel"
    if dynamic_binding(tree) or binds_custom_kernel(tree) is not True:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Global) and name in node.names:
            return None
    found = []

    def visit(node, parent):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                raise _MayBeCallable()
            # Only what runs in the module's scope: decorators, defaults, bases (not the body).
            outer = list(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                outer += node.bases + [k.value for k in node.keywords]
            else:
                outer += node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
            for child in outer:
                visit(child, node)
            return
        if isinstance(node, ast.Lambda):
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                raise _MayBeCallable()
            return
        if isinstance(node, ast.ExceptHandler) and node.name == name:
            raise _MayBeCallable()
        if getattr(ast, "MatchAs", None) and isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == name:
            raise _MayBeCallable()
        if getattr(ast, "MatchMapping", None) and isinstance(node, ast.MatchMapping) and node.rest == name:
            raise _MayBeCallable()
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            if isinstance(parent, ast.AnnAssign) and parent.target is node and parent.value is None:
                pass  # an annotation alone binds nothing
            elif ((isinstance(parent, ast.Assign) and any(t is node for t in parent.targets)
                   or isinstance(parent, ast.AnnAssign) and parent.target is node) and _is_literal(parent.value)):
                found.append(parent)
            else:
                raise _MayBeCallable()
        for child in ast.iter_child_nodes(node):
            visit(child, node)

    try:
        visit(tree, None)
    except (_MayBeCallable, RecursionError):
        return None
    if not found:
        return None
    first = min(found, key=lambda n: n.lineno)
    text = ast.unparse(first.value) if hasattr(ast, "unparse") else "a literal"
    return first.lineno, text if len(text) <= 40 else text[:37] + "..."


def read_declarations(path):
    """The submission's Declarations, parsed with ast (nothing runs); TrialError when malformed."""
    problem = file_problem(path)
    if problem:
        raise TrialError("submission %s: %s" % (path, problem))
    with open(path, "rb") as f:
        source = f.read()
    tree = parse_source(path, source)
    literal = literal_kernel(tree)
    if literal is not None:
        raise TrialError("submission %s: custom_kernel is bound only to the literal %s (line %d), which is not "
                         "callable: the evaluator's `from submission import custom_kernel` gets no function"
                         % (path, literal[1], literal[0]))
    d = Declarations(kernel=binds_custom_kernel(tree))
    for node in tree.body:
        # `NVFP4_TOGGLES = [...]`, or annotated, `NVFP4_TOGGLES: list = [...]` (a bare annotation
        # without a value declares nothing).
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        else:
            continue
        for target in targets:
            if not isinstance(target, ast.Name) or target.id not in DECLARED:
                continue
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                # TypeError: a set or dict literal with an unhashable item ({[1]: 2}).
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
