#!/usr/bin/env python3
"""Import cycles between the modules of each crate, test modules left out.

    scripts/import-cycles.py [--edges] [CRATE_SRC_DIR ...]

Reads every `.rs` file below each crate's `src/` (by default every
workspace member's, and `fuzz/`'s), lists the paths each module names
(`use crate::a::b`, `super::x`, `self::x`, and such paths written inline
in code), and lifts each edge to the two sibling modules under the lowest
common ancestor of its ends: `map/backed/tree.rs` naming `crate::backend::
fjall::X` is the edge `map -> backend`; a child naming its parent (or
ancestor) is not an edge. A cycle is a strongly connected set of two or
more siblings. Test code does not count: the item after `#[cfg(test)]`
(a `mod tests { .. }`, a `mod tests;` file, a test-only `use` or fn),
`tests.rs` files declared that way, and files of `tests/`, `benches/`,
`examples/`.

Names re-exported by a module (`pub use a::b::X;`) are followed to the
module that defines them. Prints one line per cycle and exits 1 when
there is any; `--edges` also prints every lifted edge; `--self-test`
checks the script on small made-up crates (a cycle found through a `use`,
an inline path and a re-export; none through test code or a child naming
its parent).
"""

import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def strip_comments_and_strings(text):
    """The code with comments, string and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            j = n if end < 0 else end + 1 + len(m.group(1))
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}'), not a lifetime ('a).
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def skip_item(code, i):
    """The end of the item starting at `i`: after its `;` or its `{ .. }`."""
    depth = 0
    n = len(code)
    while i < n:
        c = code[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == ";" and depth == 0:
            return i + 1
        elif c == "{":
            d, j = 1, i + 1
            while j < n and d:
                d += {"{": 1, "}": -1}.get(code[j], 0)
                j += 1
            return j
        i += 1
    return n


TEST_ATTR = re.compile(r"#\[cfg\((test|all\(test[^\]]*)\)\]")
MOD_DECL = re.compile(r"\b(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")


def drop_test_items(code):
    """The code without the items under `#[cfg(test)]`, and the names of
    the test-only `mod x;` files it declares."""
    test_mods = set()
    out, pos = [], 0
    for m in TEST_ATTR.finditer(code):
        if m.start() < pos:
            continue
        out.append(code[pos : m.start()])
        j = m.end()
        # Further attributes on the same item.
        while True:
            k = len(code[j:]) - len(code[j:].lstrip())
            if code.startswith("#[", j + k):
                j = skip_brackets(code, j + k)
            else:
                break
        end = skip_item(code, j)
        d = MOD_DECL.match(code[j:end].strip())
        if d:
            test_mods.add(d.group(1))
        out.append(re.sub(r"[^\n]", " ", code[m.start() : end]))
        pos = end
    out.append(code[pos:])
    return "".join(out), test_mods


def skip_brackets(code, i):
    depth = 0
    while i < len(code):
        if code[i] == "[":
            depth += 1
        elif code[i] == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def expand_use_tree(tree):
    """`a::{b, c::{d, e}}` -> ["a::b", "a::c::d", "a::c::e"]."""
    tree = re.sub(r"\s+", "", tree)
    tree = re.sub(r"\bas\w+", "", tree)
    # Split at top-level commas.
    def split(s):
        parts, depth, cur = [], 0, ""
        for c in s:
            if c == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += {"{": 1, "}": -1}.get(c, 0)
            cur += c
        if cur:
            parts.append(cur)
        return parts

    def rec(s):
        i = s.find("{")
        if i < 0:
            return [s]
        prefix, inner = s[:i], s[i + 1 : s.rfind("}")]
        res = []
        for part in split(inner):
            for sub in rec(part):
                res.append(prefix + sub if sub != "self" else prefix.rstrip(":"))
        return res

    return [p for t in split(tree) for p in rec(t)]


USE_STMT = re.compile(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);")
INLINE_PATH = re.compile(r"(?<![\w:])((?:crate|super|self)(?:::(?:\w+|\*))+)")


class Crate:
    def __init__(self, src):
        self.src = src
        self.modules = {}  # module path tuple -> file
        self.children = {}  # module path tuple -> set of child names
        self.test_only = set()
        self.code = {}
        roots = [f for f in ("lib.rs", "main.rs") if os.path.exists(os.path.join(src, f))]
        for r in roots:
            self.load((), os.path.join(src, r), mod_dir=src)
        if not roots:  # fuzz/: each target its own crate root
            for dirpath, _, files in os.walk(src):
                for f in sorted(files):
                    if f.endswith(".rs"):
                        rel = os.path.relpath(os.path.join(dirpath, f), src)
                        self.load((rel,), os.path.join(dirpath, f), mod_dir=dirpath, is_root=True)

    def load(self, path, file, mod_dir, is_root=False):
        if path in self.modules:
            return
        with open(file, encoding="utf-8") as fh:
            code = strip_comments_and_strings(fh.read())
        code, test_mods = drop_test_items(code)
        self.modules[path] = file
        self.code[path] = code
        self.children.setdefault(path, set())
        # Inline `mod x { .. }` blocks are part of this file's module here.
        for m in MOD_DECL.finditer(code):
            name = m.group(1)
            self.children[path].add(name)
            for cand in (os.path.join(mod_dir, name + ".rs"), os.path.join(mod_dir, name, "mod.rs")):
                if os.path.exists(cand):
                    sub_dir = os.path.join(mod_dir, name)
                    self.load(path + (name,), cand, mod_dir=sub_dir)
                    break
        for name in test_mods:
            for cand in (os.path.join(mod_dir, name + ".rs"), os.path.join(mod_dir, name, "mod.rs")):
                if os.path.exists(cand):
                    self.test_only.add(cand)

    def reexports(self, mod):
        """name -> full path, for the `pub use` items of a module."""
        res = {}
        for m in USE_STMT.finditer(self.code.get(mod, "")):
            if not m.group(1):
                continue
            for p in expand_use_tree(m.group(2)):
                segs = [s for s in p.split("::") if s]
                if segs and segs[-1] != "*":
                    res[segs[-1]] = self.absolute(mod, segs)
        return res

    def absolute(self, mod, segs):
        """Path segments as written in `mod` -> absolute tuple, or None for other crates."""
        segs = list(segs)
        if not segs:
            return None
        if segs[0] == "crate":
            base = self.crate_root(mod)
            segs = segs[1:]
        elif segs[0] in ("super", "self"):
            base = list(mod)
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    base = base[:-1]
                segs = segs[1:]
        elif segs[0] in self.children.get(mod, ()):
            base = list(mod)
        else:
            return None
        return tuple(base) + tuple(segs)

    def crate_root(self, mod):
        if mod and mod[0].endswith(".rs"):
            return [mod[0]]
        return []

    def resolve(self, full, seen=0):
        """The deepest module a path names, following re-exports."""
        full = tuple(s for s in full if s != "*")
        best = ()
        for k in range(len(full), -1, -1):
            if full[:k] in self.modules:
                best = full[:k]
                break
        rest = full[len(best) :]
        if rest and seen < 8:
            target = self.reexports(best).get(rest[0])
            if target:
                return self.resolve(target + rest[1:], seen + 1)
        return best

    def edges(self):
        res = set()
        for mod, code in self.code.items():
            if self.modules[mod] in self.test_only or self.in_test_file(mod):
                continue
            paths = []
            for m in USE_STMT.finditer(code):
                paths += expand_use_tree(m.group(2))
            paths += [m.group(1) for m in INLINE_PATH.finditer(code)]
            for p in paths:
                segs = [s for s in p.split("::") if s]
                full = self.absolute(mod, segs)
                if full is None:
                    continue
                target = self.resolve(full)
                a, b = lift(mod, target)
                if a is not None:
                    res.add((a, b))
        return res

    def in_test_file(self, mod):
        for k in range(len(mod), 0, -1):
            if self.modules.get(mod[:k]) in self.test_only:
                return True
        return False


def lift(a, b):
    """(a, b) -> the two siblings under their lowest common ancestor, or (None, None)."""
    k = 0
    while k < len(a) and k < len(b) and a[k] == b[k]:
        k += 1
    if k == len(a) or k == len(b):
        return None, None  # one is an ancestor of the other (or the same)
    return a[: k + 1], b[: k + 1]


def cycles(edges):
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def default_sources():
    srcs = []
    with open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8") as fh:
        m = re.search(r"members\s*=\s*\[([^\]]*)\]", fh.read())
    for member in re.findall(r'"([^"]+)"', m.group(1)):
        srcs.append(os.path.join(ROOT, member, "src"))
    srcs.append(os.path.join(ROOT, "fuzz", "fuzz_targets"))
    return [s for s in srcs if os.path.isdir(s)]


def name(mod):
    return "::".join(mod) or "crate"


def self_test():
    import tempfile

    cases = [
        # (files, expected cycles as sorted name lists)
        ({"lib.rs": "mod a; mod b;", "a.rs": "use crate::b::X; pub struct Y;",
          "b.rs": "pub struct X; fn f() -> super::a::Y { todo!() }"}, [["a", "b"]]),
        ({"lib.rs": "mod a; mod b; pub use b::X;", "a.rs": "pub struct Y; fn f(_: crate::X) {}",
          "b.rs": "pub struct X; use crate::a::{self as m, Y};"}, [["a", "b"]]),
        ({"lib.rs": "mod a; mod b;", "a.rs": "use crate::b::X; pub struct Y;",
          "b.rs": "pub struct X;\n#[cfg(test)]\nmod tests { use crate::a::Y; }\n"
                  "#[cfg(test)]\nuse crate::a::Y;\n// crate::a::Y\nconst S: &str = \"crate::a::Y\";"}, []),
        ({"lib.rs": "mod a; mod b;", "a.rs": "use crate::b::X; pub struct Y;",
          "b.rs": "pub struct X;\n#[cfg(test)]\nmod t;", "b/t.rs": "use crate::a::Y;"}, []),
        ({"lib.rs": "mod p; mod q;", "p/mod.rs": "mod c; pub struct T; use c::U;",
          "p/c.rs": "pub struct U; use super::T; use crate::q::V;", "q.rs": "pub struct V; use crate::p::T;"},
         [["p", "q"]]),
    ]
    failed = 0
    for n, (files, want) in enumerate(cases):
        with tempfile.TemporaryDirectory() as d:
            for f, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(d, f)), exist_ok=True)
                with open(os.path.join(d, f), "w", encoding="utf-8") as fh:
                    fh.write(text)
            got = [[name(m) for m in comp] for comp in cycles(Crate(d).edges())]
        if got != want:
            failed += 1
            print(f"self-test case {n}: found {got}, expected {want}")
    if failed:
        return 1
    print(f"self-test: {len(cases)} cases as expected")
    return 0


def main(argv):
    if "--self-test" in argv:
        return self_test()
    show_edges = "--edges" in argv
    srcs = [a for a in argv if not a.startswith("--")] or default_sources()
    found = 0
    for src in srcs:
        crate = Crate(src)
        edges = crate.edges()
        rel = os.path.relpath(src, ROOT)
        if show_edges:
            for a, b in sorted(edges):
                print(f"{rel}: {name(a)} -> {name(b)}")
        for comp in cycles(edges):
            found += 1
            inside = [(a, b) for a, b in sorted(edges) if a in comp and b in comp]
            print(f"{rel}: import cycle among {', '.join(name(c) for c in comp)} ("
                  + "; ".join(f"{name(a)} -> {name(b)}" for a, b in inside) + ")")
    if found:
        return 1
    print(f"no import cycle in {len(srcs)} crates")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
