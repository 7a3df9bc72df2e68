"""Study (not product code): how much of LibCST's parse could be skipped by parsing only the
top-level statements that could matter to a rule (SPEED_NOTES section 8).

    cd /tmp && LIM=300 KEEP_SCRIPT=1 PYTHONPATH=<tree> python <tree>/benchmarks/parse_less_study.py DIR

For each file that reaches LibCST today (default rules), four choices of the statements to keep
(imports always; KEEP_SCRIPT=1: also what makes the file a script, top-level loops/with/calls and
`if __name__`), each closed over the names kept statements use (a statement defining one is kept):
  A  seeds: statements naming an import of a deep-learning package, or an identifier/string with a
     word of the rules' ast_prefilter expressions in it (substring)
  B  as A, and the closure also keeps statements that use a name a kept statement defines (callers)
  C  as A, the words as whole identifiers/strings only
  D  seeds: statements naming an import of a deep-learning package only
The other top-level statements are blanked (their lines emptied, line numbers kept). Printed: the
lines skipped, LibCST's parse time (thread CPU) of the whole and of the blanked texts, and the
findings (default rules and ALL) lost or new on the blanked texts; the differences are written to
$STUDY_DIFFS (default parse_less_diffs.json in the current directory).
"""
import ast, os, re, sys, time, json, collections, threading
sys.setrecursionlimit(20000)
threading.stack_size(512 * 2**20)
from gpulint import engine
from gpulint.engine import Options, BadInput
from gpulint.runner import _rules_for
from gpulint.registry import Registry

KEEP_SCRIPT = os.environ.get("KEEP_SCRIPT", "1") == "1"
DL = ("torch", "accelerate", "lightning", "pytorch_lightning", "transformers", "deepspeed", "apex",
      "timm", "torchvision", "torchmetrics", "diffusers", "peft", "torchaudio", "torchtext", "fairscale", "horovod")

def words_of_rules(rules):
    ws = set()
    for r in rules:
        pats = []
        for attr in ("ast_prefilter",):
            v = getattr(r, attr, None)
            if v:
                pats.extend([v] if isinstance(v, str) else v)
        for p in pats:
            for w in re.findall(r"[A-Za-z_][A-Za-z_0-9]{2,}", p):
                if w not in ("script", "loop", "base", "def", "expr", "import", "class"):
                    ws.add(w)
    return ws

def stmt_info(stmt):
    refs, strs = set(), []
    for n in ast.walk(stmt):
        t = type(n)
        if t is ast.Name: refs.add(n.id)
        elif t is ast.Attribute: refs.add(n.attr)
        elif t is ast.keyword and n.arg: refs.add(n.arg)
        elif t is ast.arg: refs.add(n.arg)
        elif t is ast.Constant and type(n.value) is str: strs.append(n.value[:200])
        elif t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef): refs.add(n.name)
        elif t in (ast.Import, ast.ImportFrom):
            for a in n.names: refs.update(a.name.split("."))
    defs = set()
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        defs.add(stmt.name)
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for a in stmt.names: defs.add(a.asname or a.name.split(".")[0])
    else:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store): defs.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)): defs.add(n.name)
    return refs, strs, defs

def plan(text, tree, words, bidir, exact=False, aliases_only=False):
    body = tree.body
    aliases = set()
    for s in ast.walk(tree):
        if isinstance(s, ast.Import):
            for a in s.names:
                if a.name.split(".")[0] in DL: aliases.add(a.asname or a.name.split(".")[0])
        elif isinstance(s, ast.ImportFrom) and s.module and s.level == 0 and s.module.split(".")[0] in DL:
            for a in s.names: aliases.add(a.asname or a.name)
    infos = [stmt_info(s) for s in body]
    wrx = re.compile("|".join(sorted(map(re.escape, words)))) if words else None
    keep = [False] * len(body)
    for i, (s, (refs, strs, defs)) in enumerate(zip(body, infos)):
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            keep[i] = True; continue
        if KEEP_SCRIPT and (isinstance(s, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith))
                or (isinstance(s, ast.If) and "__name__" in ast.dump(s.test))
                or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call))):
            keep[i] = True; continue  # what makes the file a script (ScriptModel.is_script)
        if refs & aliases: keep[i] = True; continue
        if aliases_only:
            continue
        if exact:
            if refs & words or any(x in words for x in strs):
                keep[i] = True
        elif wrx is not None and (any(wrx.search(r) for r in refs) or any(wrx.search(x) for x in strs)):
            keep[i] = True
    changed = True
    while changed:
        changed = False
        needed = set().union(*(infos[i][0] for i in range(len(body)) if keep[i]))
        provided = set().union(*(infos[i][2] for i in range(len(body)) if keep[i]))
        for i in range(len(body)):
            if keep[i]: continue
            refs, strs, defs = infos[i]
            if defs & needed or (bidir and refs & provided):
                keep[i] = True; changed = True
    return keep

def blank(text, tree, keep):
    lines = text.split("\n")
    keep_lines = set()
    spans = []
    for s, k in zip(tree.body, keep):
        a = min([s.lineno] + [d.lineno for d in getattr(s, "decorator_list", [])])
        b = s.end_lineno
        spans.append((a, b, k))
        if k: keep_lines.update(range(a, b + 1))
    skipped = 0
    for a, b, k in spans:
        if k: continue
        if any(l in keep_lines for l in range(a, b + 1)): continue
        for l in range(a, b + 1):
            lines[l - 1] = ""
        skipped += b - a + 1
    return "\n".join(lines), skipped

def key(d):
    return (d.code, d.line, d.col, d.message)

def main(paths, codes_default, codes_all):
    rules_d = _rules_for(tuple(codes_default), ())
    rules_a = _rules_for(tuple(codes_all), ())
    words = words_of_rules(rules_a)
    engine.tune_gc(); engine.fast_node_identity()
    T = time.thread_time
    st = collections.Counter()
    diffs = {"A": [], "B": [], "C": [], "D": []}
    for p in paths:
        try:
            text = engine._read(p)[0].text
            tree = ast.parse(text)
        except Exception:
            continue
        if "\r" in text: continue
        facts = set()
        try:
            engine.bound_tree(tree, facts, text)
        except BadInput:
            continue
        pre = engine.prefilter_for(rules_d)
        live = {id(r) for r in engine.ast_select(rules_d, "\n".join(facts))}
        if not pre.select_live(text, live):
            continue  # never reaches LibCST today
        n = text.count("\n") + 1
        st["files"] += 1; st["lines"] += n
        t0 = T(); engine._parse_module(text); tfull = T() - t0
        st["parse_full"] += tfull
        base_d = {key(d) for d in engine.run_text(p, text, rules_d, Options()).diagnostics}
        base_a = {key(d) for d in engine.run_text(p, text, rules_a, Options()).diagnostics}
        for variant, bidir, exact, ao in (("A", False, False, False), ("B", True, False, False), ("C", False, True, False), ("D", False, False, True)):
            keep = plan(text, tree, words, bidir, exact, ao)
            btext, skipped = blank(text, tree, keep)
            st[variant + "_skipped_lines"] += skipped
            if skipped == 0:
                st[variant + "_parse_kept"] += tfull
                continue
            st[variant + "_files_cut"] += 1
            t0 = T(); engine._parse_module(btext); tk = T() - t0
            st[variant + "_parse_kept"] += tk
            try:
                got_d = {key(d) for d in engine.run_text(p, btext, rules_d, Options()).diagnostics}
                got_a = {key(d) for d in engine.run_text(p, btext, rules_a, Options()).diagnostics}
            except BadInput as e:
                diffs[variant].append((p, "badinput", str(e))); continue
            for name, base, got in (("default", base_d, got_d), ("ALL", base_a, got_a)):
                lost, new = base - got, got - base
                st[f"{variant}_{name}_lost"] += len(lost); st[f"{variant}_{name}_new"] += len(new)
                st[f"{variant}_{name}_base"] += len(base)
                for d in sorted(lost): diffs[variant].append((p, name, "lost", d))
                for d in sorted(new): diffs[variant].append((p, name, "new", d))
    for k in sorted(st): print(k, round(st[k], 3) if isinstance(st[k], float) else st[k])
    json.dump(diffs, open(os.environ.get("STUDY_DIFFS", "parse_less_diffs.json"), "w"), indent=0, default=str)

if __name__ == "__main__":
    root = sys.argv[1]
    reg = Registry.load([])
    cd = sorted(r.code for r in reg.rules if r.default)
    ca = sorted(r.code for r in reg.rules)
    paths = []
    for d, _, fs in os.walk(root):
        for f in fs:
            if f.endswith((".py", ".pyi")): paths.append(os.path.join(d, f))
    paths.sort()
    lim = int(os.environ.get("LIM", "0"))
    if lim: paths = paths[::max(1, len(paths) // lim)]
    t = threading.Thread(target=main, args=(paths, cd, ca)); t.start(); t.join()
