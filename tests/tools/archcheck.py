#!/usr/bin/python3
"""archcheck.py - the structure criteria of oqc's sources (docs/testing.md, "Structure
checks"; issue 29).  Python 3 standard library only, plus `nm` for the call graph.

    tests/tools/archcheck.py [--only CRITERION[,...]] [--layers FILE] [--obj DIR]
                             [--root DIR] [--ctags] [-v]

Criteria (the source files: *.c, *.h and *.def under compiler/, passes/ and runtime/ of
--root, default the current folder):

  layering        every source file is in a layer of --layers (default
                  tests/tools/layers.txt; lines `name: folder [folder...]`, lowest layer
                  first, `#` comments; a file belongs to the layer of the longest folder
                  holding it, at any depth), and nothing depends on a higher layer:
                  (i)  an `#include "x.h"` (or <x.h>) that names a project header: the
                       header is looked up next to the including file, then in every
                       folder of the source tree (the compiler's -I list covers them
                       all); it must be in the same or a lower layer;
                  (ii) a call or other reference between object files: `nm` on the
                       objects of --obj (default build/obj; OBJ/DIR/x.o is the object of
                       DIR/x.c) gives each file's undefined symbols and the file that
                       defines each global symbol; the referencing file must be in the
                       same or a higher layer than the defining one.
                  A file in no layer is an error ("file X is in no layer"), as is an
                  include matching several headers.  Sources with no object in --obj
                  (the emitted-code-only runtime files oqcf_serial.c and oqc_main.c,
                  which liboqc does not hold) take part in (i) only.
  cycles          no circle of files calling each other: the strongly connected
                  components (Tarjan) of (ii)'s file graph with more than one file, each
                  listed with its files and, edge by edge, a shortest circle through them
                  with the symbol of each edge.
  file-lines      no source file over 800 lines.
  function-lines  no function over 120 lines.  A function's length is the number of
                  lines from the first line of its definition (the first token after the
                  previous top-level declaration, function body or `;`: its storage
                  class, return type or attribute; comments and preprocessor lines
                  before it do not count) to the line of its closing brace, inclusive;
                  blank and comment lines in between count.  The parser skips comments,
                  string and character literals and preprocessor directives; a
                  top-level `{` opens a function body when the tokens before it since the
                  last `;` or `}` end with `)` (after any __attribute__ groups) and hold
                  no `=` (so struct, union and enum bodies and initialisers are not
                  functions); a macro invocation ending a line before the head (the
                  `DEFINE_X(...)` lines of kernel generators, which need no `;`) is not
                  part of it.  This covers K&R-style one-line `type f(args) {`,
                  multi-line signatures and static inline functions in headers.  Code in
                  `#else`/`#elif` branches is parsed from the state at the `#if`, so both
                  branches are read and braces opened in one do not pile up.  Function
                  bodies written inside a `#define` are not measured.

Output: one line per violation ("CRITERION: FILE[:LINE]: what"), then a summary line per
criterion ("summary CRITERION: N violations; worst: ..."); exit status 1 if any
criterion has a violation, 2 on bad usage or a missing input (no objects in --obj for
layering or cycles).  --only runs the named criteria.  --ctags compares the function
finder with Universal Ctags (`ctags --fields=+ne --c-kinds=f`: name, line of the name,
end line) and prints how they agree instead of checking.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

SRC_DIRS = ("compiler", "passes", "runtime")
SRC_EXT = (".c", ".h", ".def")
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 120
CRITERIA = ("layering", "cycles", "file-lines", "function-lines")


# ---------------------------------------------------------------- source files

def source_files(root):
    """Paths (relative to root, '/'-separated, sorted) of the checked source files."""
    out = []
    for top in SRC_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for f in filenames:
                if f.endswith(SRC_EXT):
                    out.append(os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/"))
    return sorted(out)


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        return f.read()


# ---------------------------------------------------------------- C tokens

Token = collections.namedtuple("Token", "kind text line")   # kind: id, num, str, punct
Directive = collections.namedtuple("Directive", "text line")  # a preprocessor line, joined

_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUM = re.compile(r"\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.])*")


def tokenize(text):
    """Tokens and preprocessor directives of C source TEXT, in order, with their
    1-based line numbers.  Comments are dropped; a string or character literal is one
    token; a directive (a line whose first non-blank character is `#`, with its
    backslash continuations, comments removed) is one Directive."""
    out = []
    i, n, line = 0, len(text), 1
    at_line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            at_line_start = True
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "\\" and i + 1 < n and text[i + 1] == "\n":
            i += 2
            line += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
            continue
        if c == "#" and at_line_start:
            start = line
            parts = []
            i += 1
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    i += 2
                    line += 1
                    parts.append(" ")
                elif text.startswith("/*", i):
                    j = text.find("*/", i + 2)
                    j = n if j < 0 else j + 2
                    line += text.count("\n", i, j)
                    i = j
                    parts.append(" ")
                elif text.startswith("//", i):
                    while i < n and text[i] != "\n":
                        i += 1
                elif text[i] in "\"'":
                    j = _literal_end(text, i)
                    parts.append(text[i:j])
                    line += text.count("\n", i, j)
                    i = j
                else:
                    parts.append(text[i])
                    i += 1
            out.append(Directive("".join(parts).strip(), start))
            continue
        at_line_start = False
        if c in "\"'":
            j = _literal_end(text, i)
            out.append(Token("str", text[i:j], line))
            line += text.count("\n", i, j)
            i = j
            continue
        m = _ID.match(text, i)
        if m:
            # a prefixed literal (L"..", u8"..", U'.') is one string token
            j = m.end()
            if j < n and text[j] in "\"'" and m.group() in ("L", "u", "U", "u8"):
                k = _literal_end(text, j)
                out.append(Token("str", text[i:k], line))
                i = k
                continue
            out.append(Token("id", m.group(), line))
            i = j
            continue
        m = _NUM.match(text, i)
        if m:
            out.append(Token("num", m.group(), line))
            i = m.end()
            continue
        for p in ("...", "<<=", ">>=", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=",
                  "&&", "||", "*=", "/=", "%=", "+=", "-=", "&=", "^=", "|=", "##"):
            if text.startswith(p, i):
                out.append(Token("punct", p, line))
                i += len(p)
                break
        else:
            out.append(Token("punct", c, line))
            i += 1
    return out


def _literal_end(text, i):
    """The index just past the string or character literal starting at text[i]."""
    q = text[i]
    j = i + 1
    n = len(text)
    while j < n and text[j] != q:
        if text[j] == "\\":
            j += 1
        elif text[j] == "\n":      # unterminated: stop at the line's end
            return j
        j += 1
    return min(j + 1, n)


# ---------------------------------------------------------------- functions

Function = collections.namedtuple("Function", "name start name_line end")


def _directive_name(d):
    m = re.match(r"#?\s*([a-z]+)", d.text)
    return m.group(1) if m else ""


def functions(text):
    """The function definitions of C source TEXT (see the module's comment)."""
    found = []
    # parser state: brace depth, paren depth, the top-level tokens since the last
    # boundary, the open function (its Function without end) or None
    state = {"depth": 0, "paren": 0, "sig": [], "fn": None}
    stack = []   # per open #if: the state at the #if
    for t in tokenize(text):
        if isinstance(t, Directive):
            d = _directive_name(t)
            if d in ("if", "ifdef", "ifndef"):
                stack.append(_copy(state))
            elif d in ("elif", "else") and stack:
                saved = stack[-1]
                state = _copy(saved)
            elif d == "endif" and stack:
                stack.pop()
            continue
        if t.kind == "punct" and t.text in ("(", ")"):
            state["paren"] += 1 if t.text == "(" else -1
            state["paren"] = max(state["paren"], 0)
        if state["depth"] == 0:
            if t.kind == "punct" and t.text == "{" and state["paren"] == 0:
                fn = _function_head(state["sig"])
                state["fn"] = fn
                state["depth"] = 1
                state["sig"] = []
                continue
            if t.kind == "punct" and t.text == ";" and state["paren"] == 0:
                state["sig"] = []
                continue
            state["sig"].append(t)
            continue
        if t.kind == "punct" and t.text == "{":
            state["depth"] += 1
        elif t.kind == "punct" and t.text == "}":
            state["depth"] -= 1
            if state["depth"] == 0:
                if state["fn"] is not None:
                    found.append(state["fn"]._replace(end=t.line))
                state["fn"] = None
                state["sig"] = []
                state["paren"] = 0
    return found


def _copy(state):
    return {"depth": state["depth"], "paren": state["paren"], "sig": list(state["sig"]),
            "fn": state["fn"]}


def _function_head(sig):
    """A Function (end unknown) when the top-level tokens SIG before a `{` are a function
    definition's head, else None."""
    if not sig or any(t.kind == "punct" and t.text == "=" for t in sig):
        return None
    toks = list(sig)
    # trailing __attribute__((...)) groups go first
    while len(toks) >= 2 and toks[-1].text == ")":
        # find the `(` matching the last `)`
        depth, k = 0, len(toks) - 1
        while k >= 0:
            if toks[k].text == ")":
                depth += 1
            elif toks[k].text == "(":
                depth -= 1
                if depth == 0:
                    break
            k -= 1
        if k > 0 and toks[k - 1].text in ("__attribute__", "__declspec"):
            toks = toks[:k - 1]
            continue
        break
    if not toks or toks[-1].text != ")":
        return None
    # the name: the identifier before the last top-level parenthesised group
    depth, name, name_line = 0, None, None
    for k, t in enumerate(toks):
        if t.text == "(":
            if depth == 0 and k > 0 and toks[k - 1].kind == "id" and \
                    toks[k - 1].text not in ("__attribute__", "__declspec"):
                name, name_line = toks[k - 1].text, toks[k - 1].line
            depth += 1
        elif t.text == ")":
            depth -= 1
    if name is None:
        return None
    # a macro invocation without `;` before the function (a line ending in `NAME(...)`
    # that is no __attribute__) is not part of its head: start after it
    start = 0
    depth = 0
    for k, t in enumerate(sig):
        if t.line >= name_line:
            break
        if t.text == "(":
            if depth == 0:
                opener = sig[k - 1].text if k > 0 else ""
            depth += 1
        elif t.text == ")":
            depth -= 1
            if depth == 0 and sig[k + 1].line > t.line and \
                    opener not in ("__attribute__", "__declspec"):
                start = k + 1
    return Function(name, sig[start].line, name_line, None)


# ---------------------------------------------------------------- includes

_INCLUDE = re.compile(r'#?\s*include\s*([<"])([^>"]+)[>"]')


def includes(text):
    """(line, name) of every #include of TEXT (comments ignored)."""
    out = []
    for t in tokenize(text):
        if isinstance(t, Directive):
            m = _INCLUDE.match(t.text)
            if m:
                out.append((t.line, m.group(2)))
    return out


def resolve_include(path, name, files_set, dirs):
    """The project files an include NAME in PATH may mean: next to PATH if there, else
    every folder of the tree holding NAME."""
    here = os.path.normpath(os.path.join(os.path.dirname(path), name)).replace(os.sep, "/")
    if here in files_set:
        return [here]
    out = []
    for d in dirs:
        p = os.path.normpath(os.path.join(d, name)).replace(os.sep, "/")
        if p in files_set:
            out.append(p)
    return out


# ---------------------------------------------------------------- layers

def read_layers(path):
    """[(name, [folders])], lowest first."""
    layers = []
    with open(path, encoding="utf-8") as f:
        for k, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if ":" not in line:
                raise ValueError("%s:%d: want 'name: folder [folder...]', got '%s'" % (path, k, line))
            name, rest = line.split(":", 1)
            folders = [x.strip("/") for x in rest.split()]
            if not name.strip() or not folders:
                raise ValueError("%s:%d: a layer needs a name and at least one folder" % (path, k))
            layers.append((name.strip(), folders))
    if not layers:
        raise ValueError("%s: no layers" % path)
    return layers


def layer_of(path, layers):
    """(index, name) of PATH's layer: the longest folder holding it; (None, None)."""
    best, best_len = (None, None), -1
    for idx, (name, folders) in enumerate(layers):
        for f in folders:
            if path.startswith(f + "/") and len(f) > best_len:
                best, best_len = (idx, name), len(f)
    return best


# ---------------------------------------------------------------- nm graph

def nm_graph(root, obj, files_set):
    """{(referencing file, defining file): sorted symbols} from the objects of OBJ whose
    source (OBJ/DIR/x.o -> DIR/x.c) is a checked file; and the number of objects used."""
    objs = {}
    for dirpath, _, filenames in os.walk(obj):
        for f in filenames:
            if f.endswith(".o"):
                o = os.path.join(dirpath, f)
                src = os.path.relpath(o, obj)[:-2].replace(os.sep, "/") + ".c"
                if src in files_set:
                    objs[o] = src
    if not objs:
        return None, 0
    res = subprocess.run(["nm", "-A", "-P"] + sorted(objs), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if res.returncode != 0:
        raise RuntimeError("nm failed: " + res.stderr.strip()[:300])
    defs = collections.defaultdict(set)
    undef = collections.defaultdict(set)
    for ln in res.stdout.splitlines():
        # "path.o: name type [value size]"
        m = re.match(r"(.*\.o): (\S+) (\S)", ln)
        if not m:
            continue
        src = objs.get(m.group(1))
        if src is None:
            continue
        sym, typ = m.group(2), m.group(3)
        if typ in "Uwv":
            undef[src].add(sym)
        elif typ.isupper() or typ == "u":
            defs[sym].add(src)
    edges = collections.defaultdict(set)
    for src, syms in undef.items():
        for s in syms:
            for d in defs.get(s, ()):
                if d != src:
                    edges[(src, d)].add(s)
    return {k: sorted(v) for k, v in edges.items()}, len(objs)


# ---------------------------------------------------------------- the criteria

def check_layering(root, files, layers, edges, out):
    files_set = set(files)
    dirs = sorted({os.path.dirname(f) for f in files})
    n_none = n_inc = n_call = 0
    per_file = collections.Counter()
    for f in files:
        if layer_of(f, layers)[0] is None:
            out.append("layering: %s: file %s is in no layer" % (f, f))
            n_none += 1
            per_file[f] += 1
    for f in files:
        li, ln = layer_of(f, layers)
        for line, name in includes(read(root, f)):
            cands = resolve_include(f, name, files_set, dirs)
            if len(cands) > 1:
                out.append("layering: %s:%d: include \"%s\" matches several headers: %s" %
                           (f, line, name, " ".join(cands)))
                n_inc += 1
                per_file[f] += 1
                continue
            if not cands or li is None:
                continue
            hi, hn = layer_of(cands[0], layers)
            if hi is not None and hi > li:
                out.append("layering: %s:%d: includes %s (layer %s) from layer %s" %
                           (f, line, cands[0], hn, ln))
                n_inc += 1
                per_file[f] += 1
    for (a, b), syms in sorted(edges.items()):
        ai, an = layer_of(a, layers)
        bi, bn = layer_of(b, layers)
        if ai is None or bi is None or bi <= ai:
            continue
        out.append("layering: %s: uses %s of %s (layer %s) from layer %s" %
                   (a, ", ".join(syms), b, bn, an))
        n_call += 1
        per_file[a] += 1
    total = n_none + n_inc + n_call
    worst = ""
    if per_file:
        wf, wn = max(sorted(per_file.items()), key=lambda kv: kv[1])
        worst = "; worst: %s (%d)" % (wf, wn)
    return total, ("%d violations (%d files in no layer, %d upward includes, %d upward "
                   "references between files)%s" % (total, n_none, n_inc, n_call, worst))


def sccs(nodes, succ):
    """Tarjan's strongly connected components (iterative), each a sorted list."""
    index, low, on, stack, comps = {}, {}, set(), [], []
    counter = [0]
    for v0 in nodes:
        if v0 in index:
            continue
        work = [(v0, iter(succ.get(v0, ())))]
        index[v0] = low[v0] = counter[0]
        counter[0] += 1
        stack.append(v0)
        on.add(v0)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ.get(w, ()))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(sorted(comp))
    return comps


def shortest_cycle(comp, succ):
    """A shortest circle through comp[0] inside the component, as a list of files."""
    inside = set(comp)
    start = comp[0]
    prev = {start: None}
    queue = collections.deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(succ.get(v, ())):
            if w not in inside:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path))
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return [start]


def check_cycles(edges, out):
    succ = collections.defaultdict(set)
    nodes = set()
    for a, b in edges:
        succ[a].add(b)
        nodes.update((a, b))
    comps = [c for c in sccs(sorted(nodes), succ) if len(c) > 1]
    comps.sort(key=lambda c: (-len(c), c))
    for c in comps:
        cyc = shortest_cycle(c, succ)
        steps = []
        for k, a in enumerate(cyc):
            b = cyc[(k + 1) % len(cyc)]
            steps.append("%s -> %s [%s]" % (a, b, edges[(a, b)][0]))
        inner = sum(1 for (a, b) in edges if a in c and b in c)
        out.append("cycles: %d files call each other (%d edges): %s; a circle: %s" %
                   (len(c), inner, " ".join(c), ", ".join(steps)))
    worst = "; worst: %d files (%s ...)" % (len(comps[0]), comps[0][0]) if comps else ""
    return len(comps), "%d circles of files%s" % (len(comps), worst)


def check_file_lines(root, files, out, limit):
    over = []
    for f in files:
        text = read(root, f)
        n = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        if n > limit:
            over.append((n, f))
    over.sort(key=lambda x: (-x[0], x[1]))
    for n, f in over:
        out.append("file-lines: %s: %d lines (limit %d)" % (f, n, limit))
    worst = "; worst: %s (%d lines)" % (over[0][1], over[0][0]) if over else ""
    return len(over), "%d files over %d lines%s" % (len(over), limit, worst)


def check_function_lines(root, files, out, limit):
    over = []
    for f in files:
        if f.endswith(".def"):
            continue
        for fn in functions(read(root, f)):
            n = fn.end - fn.start + 1
            if n > limit:
                over.append((n, f, fn))
    over.sort(key=lambda x: (-x[0], x[1], x[2].start))
    for n, f, fn in over:
        out.append("function-lines: %s:%d: %s: %d lines (limit %d)" % (f, fn.start, fn.name, n, limit))
    worst = "; worst: %s in %s (%d lines)" % (over[0][2].name, over[0][1], over[0][0]) if over else ""
    return len(over), "%d functions over %d lines%s" % (len(over), limit, worst)


# ---------------------------------------------------------------- ctags comparison

def compare_ctags(root, files, limit):
    cfiles = [f for f in files if not f.endswith(".def")]
    try:
        res = subprocess.run(["ctags", "--fields=+ne", "--c-kinds=f", "--language-force=C",
                              "-o", "-"] + cfiles, cwd=root, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True, check=False)
    except OSError as e:
        print("archcheck: ctags: %s" % e, file=sys.stderr)
        return 2
    theirs = {}
    for ln in res.stdout.splitlines():
        parts = ln.split("\t")
        fields = dict(p.split(":", 1) for p in parts[3:] if ":" in p)
        if "line" in fields and "end" in fields:
            theirs[(parts[1], int(fields["line"]))] = (parts[0], int(fields["end"]))
    if not theirs:
        print("archcheck: ctags gave no end lines (Universal Ctags with --fields=+ne needed): %s"
              % res.stderr.strip()[:200], file=sys.stderr)
        return 2
    mine = {}
    for f in cfiles:
        for fn in functions(read(root, f)):
            mine[(f, fn.name_line)] = fn
    both = sorted(set(mine) & set(theirs))
    same_end = [k for k in both if theirs[k][1] == mine[k].end and theirs[k][0] == mine[k].name]
    print("functions: archcheck %d, ctags %d, found by both (file and line of the name) %d, "
          "of which the same name and end line %d" % (len(mine), len(theirs), len(both), len(same_end)))
    for k in both:
        if k not in same_end:
            print("  differ: %s:%d: archcheck %s end %d, ctags %s end %d" %
                  (k[0], k[1], mine[k].name, mine[k].end, theirs[k][0], theirs[k][1]))
    # the rest: the same function (file and end line) found at another line by ctags,
    # which takes a macro invocation before a function for the function itself
    only_mine = sorted(set(mine) - set(theirs))
    only_theirs = sorted(set(theirs) - set(mine))
    by_end = {(k[0], theirs[k][1]): k for k in only_theirs}
    shifted = 0
    for k in only_mine:
        t = by_end.pop((k[0], mine[k].end), None)
        if t is not None:
            shifted += 1
            print("  same end, another line: %s: archcheck %s at line %d, ctags %s at line %d, end %d"
                  % (k[0], mine[k].name, k[1], theirs[t][0], t[1], mine[k].end))
        else:
            print("  archcheck only: %s:%d: %s (end %d)" % (k[0], k[1], mine[k].name, mine[k].end))
    for (f, _), k in sorted(by_end.items()):
        print("  ctags only: %s:%d: %s (end %d)" % (f, k[1], theirs[k][0], theirs[k][1]))
    print("functions with the same end line but another start: %d; found by one only: %d" %
          (shifted, len(only_mine) - shifted + len(by_end)))
    heads = collections.Counter(min(mine[k].name_line - mine[k].start, 3) for k in mine)
    print("signature lines before the name line (archcheck's start): " +
          ", ".join("%s%d: %d" % ("" if d < 3 else ">=", d, c) for d, c in sorted(heads.items())))
    ours = {k for k in mine if mine[k].end - mine[k].start + 1 > limit}
    # ctags has no signature start: its length is from the name line
    ctg = {k for k in theirs if theirs[k][1] - k[1] + 1 > limit}
    print("over %d lines: archcheck %d (from the signature's first line), ctags %d (from the "
          "name line), in both %d" % (limit, len(ours), len(ctg), len(ours & ctg)))
    for k in sorted(ours ^ ctg):
        print("  only %s: %s:%d" % ("archcheck" if k in ours else "ctags", k[0], k[1]))
    return 0


# ---------------------------------------------------------------- main

def main(argv):
    ap = argparse.ArgumentParser(prog="archcheck.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(CRITERIA),
                    help="criteria to run, comma-separated: " + ", ".join(CRITERIA))
    ap.add_argument("--layers", default=None, help="the layer file (default ROOT/tests/tools/layers.txt)")
    ap.add_argument("--obj", default=None, help="the object folder (default ROOT/build/obj)")
    ap.add_argument("--root", default=".", help="the source tree (default .)")
    ap.add_argument("--ctags", action="store_true", help="compare the function finder with ctags")
    ap.add_argument("-v", "--verbose", action="store_true", help="say what was read")
    a = ap.parse_args(argv)
    root = a.root
    only = [c.strip() for c in a.only.split(",") if c.strip()]
    bad = [c for c in only if c not in CRITERIA]
    if bad or not only:
        print("archcheck: unknown criterion %s (want %s)" % (",".join(bad) or "''", ", ".join(CRITERIA)),
              file=sys.stderr)
        return 2
    files = source_files(root)
    if not files:
        print("archcheck: no source files under %s (%s)" % (root, ", ".join(SRC_DIRS)), file=sys.stderr)
        return 2
    if a.ctags:
        return compare_ctags(root, files, MAX_FUNCTION_LINES)
    edges = None
    if "layering" in only or "cycles" in only:
        obj = a.obj or os.path.join(root, "build", "obj")
        try:
            edges, nobj = nm_graph(root, obj, set(files))
        except (RuntimeError, OSError) as e:
            print("archcheck: %s" % e, file=sys.stderr)
            return 2
        if edges is None:
            print("archcheck: no object files of the sources in %s (build first: make)" % obj,
                  file=sys.stderr)
            return 2
        if a.verbose:
            print("archcheck: %d source files, %d objects, %d file-to-file references" %
                  (len(files), nobj, len(edges)))
    layers = None
    if "layering" in only:
        lp = a.layers or os.path.join(root, "tests", "tools", "layers.txt")
        try:
            layers = read_layers(lp)
        except (ValueError, OSError) as e:
            print("archcheck: %s" % e, file=sys.stderr)
            return 2
    out, summary, failed = [], [], 0
    for c in CRITERIA:
        if c not in only:
            continue
        if c == "layering":
            n, s = check_layering(root, files, layers, edges, out)
        elif c == "cycles":
            n, s = check_cycles(edges, out)
        elif c == "file-lines":
            n, s = check_file_lines(root, files, out, MAX_FILE_LINES)
        else:
            n, s = check_function_lines(root, files, out, MAX_FUNCTION_LINES)
        summary.append("summary %s: %s" % (c, s))
        failed += n > 0
    print("\n".join(out + summary))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
