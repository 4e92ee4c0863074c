#!/usr/bin/env bash
# include_graph.sh: checks the module graph of service/ (tests aside): a module is a .c with its .h;
# module A depends on B when A's .c or .h includes B's header. Prints every cycle (exit 1), and the
# parts' rule: common depends on nothing else of ours, server/worker/admin/webhooks only on common (and the
# server's main on the lab), the lab on common and server. `make lint` runs it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python3 - <<'PY'
import os, re, sys
root = 'service'
parts = ['common', 'server', 'worker', 'admin', 'lab', 'webhooks']
where, deps = {}, {}
for part in parts:
    d = os.path.join(root, part)
    if not os.path.isdir(d):
        continue
    for f in os.listdir(d):
        if f.endswith(('.c', '.h')):
            where[f[:-2]] = part
for mod, part in where.items():
    deps.setdefault(mod, set())
    for ext in ('.c', '.h'):
        path = os.path.join(root, part, mod + ext)
        if not os.path.exists(path):
            continue
        for line in open(path):
            m = re.match(r'\s*#\s*include\s+"([^"]+)\.h"', line)
            if m and m.group(1) in where and m.group(1) != mod:
                deps[mod].add(m.group(1))
allowed = {'common': {'common'}, 'server': {'common', 'server'}, 'worker': {'common', 'worker'},
           'admin': {'common', 'admin'}, 'lab': {'common', 'server', 'lab'},
           'webhooks': {'common', 'webhooks'}}
# The one place that wires the laboratory into the server.
exceptions = {('server_main', 'lab')}
bad = 0
for mod, ds in sorted(deps.items()):
    for d in sorted(ds):
        if where[d] not in allowed[where[mod]] and (mod, d) not in exceptions:
            print(f'layer: {where[mod]}/{mod} includes {where[d]}/{d}')
            bad = 1
# Cycles: Tarjan's strongly connected components.
index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]
def visit(v):
    index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
    for w in deps[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(sorted(comp))
sys.setrecursionlimit(10000)
for v in sorted(deps):
    if v not in index:
        visit(v)
for comp in sccs:
    print('cycle:', ' <-> '.join(comp))
    bad = 1
edges = sum(len(d) for d in deps.values())
print(f'include graph: {len(deps)} modules, {edges} edges, {len(sccs)} cycles')
sys.exit(bad)
PY
