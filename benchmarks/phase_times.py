"""Thread CPU per phase, rule and analysis of `gpulint check` over a tree, in one process.

    cd /tmp && PYTHONPATH=<tree> python <tree>/benchmarks/phase_times.py DIR [default|ALL]
    LIM=150 ...   # an evenly spread subset of about 150 files

The engine's per-file steps of `_run_text` (read, skip-file check, CPython's compile, bound_tree
with the facts, ast_select, select_live, TextMatches, LibCST's parse, the ScriptModel,
Suppressions, each rule, release, the suppression step) are repeated here in the order the engine
runs them, each under a thread-CPU timer (time.thread_time: other processes' load does not count,
unlike cProfile/pyinstrument it does not hook every Python call). The first use of the flow engine,
of each family analysis (ScriptModel.facts) and of the positions map is timed apart from the rule
that asked for it (exclusive times: a rule's figure leaves out the analyses it started).
Run it from outside the tree (`python -m`/script runs put the current directory first).
"""
import collections
import os
import sys
import time
sys.setrecursionlimit(20000)
import threading
threading.stack_size(512*2**20)
from gpulint import engine
from gpulint.engine import (BadInput, TextMatches, ast_select, bound_tree, chunk_starts, libcst_parse,
                            prefilter_for, python_syntax, release_model, suppression_only)
from gpulint.engine import _read
from gpulint.runner import _rules_for
import gpulint.model as M
import gpulint.rule as R
T = time.thread_time
acc = collections.Counter()
cnt = collections.Counter()
stack = []  # [label, start, child]
def push(label):
    stack.append([label, T(), 0.0])
def pop():
    label, s, child = stack.pop()
    d = T() - s
    acc[label] += d - child
    cnt[label] += 1
    if stack:
        stack[-1][2] += d
def timed(label, fn, *a, **k):
    push(label)
    try:
        return fn(*a, **k)
    finally:
        pop()
# wrap analyses
orig_facts = M.ScriptModel.facts
def facts(self, provider):
    if provider in self._facts:
        return self._facts[provider]
    return timed("an:" + provider.__name__, orig_facts, self, provider)
M.ScriptModel.facts = facts
orig_flow = M.ScriptModel.flow.fget
def flow(self):
    if self._flow is not None:
        return self._flow
    return timed("an:flow", orig_flow, self)
M.ScriptModel.flow = property(flow)
orig_pos = R.Context.positions.fget
def positions(self):
    if self._positions is not None:
        return self._positions
    return timed("positions", orig_pos, self)
R.Context.positions = property(positions)
# other lazy model properties? time cached_property-ish attributes generically later

def main(paths, codes):
    rules = _rules_for(tuple(codes), ())
    engine.tune_gc(); engine.fast_node_identity()
    from gpulint.suppression import might_skip_file, Suppressions
    from gpulint.rule import Context, make_diagnostic
    from gpulint.model import ScriptModel
    t0 = T()
    nout = 0
    for p in paths:
        push("read"); 
        try:
            src, stamp, raw = _read(p)
        except BadInput:
            pop(); continue
        pop()
        text = src.text
        push("skipcheck")
        skip = might_skip_file(text) and Suppressions(text).skip_file
        pop()
        if skip: continue
        facts = set()
        try:
            tree = timed("compile", python_syntax, text)
            timed("bound_tree", bound_tree, tree, facts, text)
            starts = timed("chunk_starts", chunk_starts, tree, text)
            del tree
        except BadInput:
            continue
        pre = prefilter_for(rules)
        push("ast_select"); live = {id(r) for r in ast_select(rules, "\n".join(facts))}; pop()
        selected = timed("select_live", pre.select_live, text, live)
        push("textmatches"); ran = TextMatches(pre, text); pop()
        if not selected:
            diags = timed("suppression_only", suppression_only, p, text, ran)
            continue
        module = timed("parse", libcst_parse, text, starts)
        model = timed("model", ScriptModel, module, text)
        push("ctx"); ctx = Context(p, text, module, model); pop()
        sup = timed("Suppressions", Suppressions, text)
        ctx.suppressed = sup.suppressed
        diags = []
        for rule in selected:
            ctx.rule = rule
            push("rule:" + rule.code)
            try:
                for f in rule.check(ctx):
                    push("make_diagnostic"); diags.append(make_diagnostic(ctx, f)); pop()
            except Exception as e:
                print("ERR", p, rule.code, e, file=sys.stderr)
            pop()
        timed("release", release_model, model)
        push("sup.apply"); diags = sup.apply(diags, p, ran); pop()
        nout += len(diags)
        del module, model, ctx
    total = T() - t0
    print(f"total {total:.2f}s  diags {nout}")
    for k, v in acc.most_common():
        print(f"{k:28s} {v:7.3f}s {100*v/total:5.1f}%  n={cnt[k]}")

if __name__ == "__main__":
    root = sys.argv[1]
    from gpulint.registry import Registry
    reg = Registry.load([])
    which = sys.argv[2] if len(sys.argv) > 2 else "default"
    codes = sorted(r.code for r in reg.rules if (which == "ALL" or r.default))
    paths = []
    for d, _, fs in os.walk(root):
        for f in fs:
            if f.endswith((".py", ".pyi")): paths.append(os.path.join(d, f))
    paths.sort()
    lim = int(os.environ.get("LIM", "0"))
    if lim: paths = paths[::max(1, len(paths)//lim)]
    t = threading.Thread(target=main, args=(paths, codes)); t.start(); t.join()
