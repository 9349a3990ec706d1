#!/usr/bin/env python3
"""Facts of one trace read from its raw events, independently of ptadvise, for reviewing findings by hand
(docs/CORPUS_REVIEW.md): steps and periods, GPU busy time (union of kernel/copy/memset intervals) per step,
the longest GPU ops, runtime syncs/copies/allocations and the longest CPU ops. usage: trace_facts.py TRACE"""
import gzip, json, sys, collections, re
def load(p):
    op = gzip.open if p.endswith('.gz') else open
    with op(p, 'rt', errors='replace') as f: d = json.load(f)
    return d if isinstance(d, dict) else {'traceEvents': d}
def union(iv):
    iv = sorted(iv); tot = 0; cs = ce = None
    for s, e in iv:
        if cs is None or s > ce:
            if cs is not None: tot += ce - cs
            cs, ce = s, e
        else: ce = max(ce, e)
    if cs is not None: tot += ce - cs
    return tot
GPU = {'kernel', 'gpu_memcpy', 'gpu_memset', 'memcpy', 'memset', 'mtia_kernel'}
p = sys.argv[1]; d = load(p); ev = [e for e in d.get('traceEvents', []) if isinstance(e, dict) and e.get('ph') == 'X']
cat = lambda e: str(e.get('cat', '')).lower()
gpu = [e for e in ev if cat(e) in GPU or cat(e).startswith('kernel')]
steps = sorted([e for e in ev if str(e.get('name', '')).startswith('ProfilerStep#')], key=lambda e: e['ts'])
print('file', p.split('/')[-1]); print('events', len(ev), 'gpu ops', len(gpu), 'devprops', len(d.get('deviceProperties', []) or []))
print('cats', dict(collections.Counter(cat(e) for e in ev).most_common(12)))
if steps:
    print('ProfilerSteps', len(steps), 'dur ms', [round(float(s['dur'])/1000, 2) for s in steps][:12])
    starts = [float(s['ts']) for s in steps]
    if len(starts) > 1: print('periods ms', [round((b-a)/1000, 2) for a, b in zip(starts, starts[1:])][:12])
if gpu:
    iv = [(float(e['ts']), float(e['ts']) + float(e.get('dur', 0))) for e in gpu]
    lo = min(a for a, _ in iv); hi = max(b for _, b in iv); busy = union(iv)
    print('gpu span ms %.2f busy ms %.2f (%.1f%%)' % ((hi-lo)/1e3, busy/1e3, 100*busy/max(hi-lo, 1)))
    for s in steps:
        a, b = float(s['ts']), float(s['ts']) + float(s['dur'])
        clip = [(max(x, a), min(y, b)) for x, y in iv if y > a and x < b]
        print('  step %s: dur %.2f ms gpu busy in step %.2f ms' % (s['name'], (b-a)/1e3, union(clip)/1e3))
    k = collections.defaultdict(lambda: [0, 0.0])
    for e in gpu: k[e['name']][0] += 1; k[e['name']][1] += float(e.get('dur', 0))
    print('top gpu ops (count, ms):')
    for n, (c, t) in sorted(k.items(), key=lambda x: -x[1][1])[:8]: print('   %5d %9.3f  %s' % (c, t/1e3, n[:110]))
    print('gpu cats', dict(collections.Counter(cat(e) for e in gpu)))
rt = collections.defaultdict(lambda: [0, 0.0])
for e in ev:
    n = str(e.get('name', ''))
    if re.search(r'Synchronize|Memcpy|memcpy|Malloc|Free|hipMemcpy', n) and cat(e) in ('cuda_runtime', 'runtime', 'cuda_driver', 'hip_runtime'):
        rt[n][0] += 1; rt[n][1] += float(e.get('dur', 0))
if rt:
    print('runtime syncs/copies/allocs (count, ms):')
    for n, (c, t) in sorted(rt.items(), key=lambda x: -x[1][1])[:8]: print('   %5d %9.3f  %s' % (c, t/1e3, n))
cpu = collections.defaultdict(lambda: [0, 0.0])
for e in ev:
    if cat(e) in ('cpu_op', 'operator', 'user_annotation', 'python_function'):
        cpu[str(e.get('name'))][0] += 1; cpu[str(e.get('name'))][1] += float(e.get('dur', 0))
print('top cpu/annotation (count, ms):')
for n, (c, t) in sorted(cpu.items(), key=lambda x: -x[1][1])[:8]: print('   %5d %9.3f  %s' % (c, t/1e3, n[:100]))
