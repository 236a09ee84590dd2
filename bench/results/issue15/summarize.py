# Medians of the interleaved runs in this directory (or in DIR), as markdown
# tables:
#   python3 summarize.py core|franzgo|leader|wire [DIR]
import os, re, sys, statistics, collections
R=os.path.abspath(sys.argv[2]) if len(sys.argv)>2 else os.path.dirname(os.path.abspath(__file__))
def load(path):
    d=collections.defaultdict(lambda: collections.defaultdict(list))
    try: lines=open(path).read().splitlines()
    except FileNotFoundError: return d
    for line in lines:
        if not line.startswith('Benchmark'): continue
        parts=line.split()
        name=re.sub(r'-\d+$','',parts[0])
        vals=parts[2:]
        for i in range(0,len(vals)-1,2):
            try: d[name][vals[i+1]].append(float(vals[i]))
            except ValueError: pass
    return d
med=lambda xs: statistics.median(xs) if xs else float('nan')
def fmt(x): return f"{x:,.0f}"
which=sys.argv[1]
if which=='core':
    base=load(R+'/core-base.txt'); fin=load(R+'/core-final.txt'); fl=load(R+'/core-floor.txt')
    print('| members | tasks | event | before cpu-ns/op | after cpu-ns/op | after/before | Floor cpu-ns/op | before/Floor | after/Floor | after B/op (before) | after allocs/op (before) | n |')
    print('|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    rows={}
    for name in fin:
        m=re.match(r'BenchmarkAssign/members=(\d+)/tasks=(\d+)/event=(.*)',name)
        if not m: continue
        fname=name.replace('BenchmarkAssign','BenchmarkFloor')
        b=med(base[name]['cpu-ns/op']); a=med(fin[name]['cpu-ns/op']); f=med(fl[fname]['cpu-ns/op'])
        rows[(int(m.group(1)),m.group(3))]=(a,f)
        print(f"| {int(m.group(1)):,} | {int(m.group(2)):,} | {m.group(3)} | {fmt(b)} | {fmt(a)} | {a/b:.2f} | {fmt(f)} | {b/f:.1f}x | {a/f:.1f}x | {fmt(med(fin[name]['B/op']))} ({fmt(med(base[name]['B/op']))}) | {fmt(med(fin[name]['allocs/op']))} ({fmt(med(base[name]['allocs/op']))}) | {len(fin[name]['cpu-ns/op'])}/{len(base[name]['cpu-ns/op'])}/{len(fl[fname]['cpu-ns/op'])} |")
    print()
    print('| event | after 1,000 -> 10,000 (cpu) | Floor 1,000 -> 10,000 (cpu) |')
    print('|---|---:|---:|')
    for ev in ['stable','scale-up','scale-down','crash','promote','standbys=1']:
        if (1000,ev) in rows and (10000,ev) in rows:
            print(f"| {ev} | {rows[(10000,ev)][0]/rows[(1000,ev)][0]:.1f}x | {rows[(10000,ev)][1]/rows[(1000,ev)][1]:.1f}x |")
elif which=='franzgo':
    base=load(R+'/franzgo-base.txt'); fin=load(R+'/franzgo-final.txt')
    groups=collections.OrderedDict()
    for name in fin:
        m=re.match(r'BenchmarkBalance/members=\d+/tasks=\d+/topics=(\d+)/event=([^/]+)/balancer=(.*)',name)
        groups.setdefault((int(m.group(1)),m.group(2)),{})[m.group(3)]=name
    print('| topics | event | learner before | learner after | learner-hashed after | sticky | cooperative-sticky | after/sticky | after/coop | hashed/sticky | hashed/coop |')
    print('|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for (tp,ev),bs in groups.items():
        g=lambda d,b: med(d[bs[b]]['cpu-ns/op'])
        lb=g(base,'learner'); la=g(fin,'learner'); lh=g(fin,'learner-hashed'); st=g(fin,'sticky'); co=g(fin,'cooperative-sticky')
        print(f"| {tp} | {ev} | {fmt(lb)} | {fmt(la)} | {fmt(lh)} | {fmt(st)} | {fmt(co)} | {la/st:.2f} | {la/co:.2f} | {lh/st:.2f} | {lh/co:.2f} |")
elif which=='leader':
    base=load(R+'/leader-base.txt'); fin=load(R+'/leader-final.txt')
    print('| event | kgolearner before | kgolearner after | cooperative-sticky | after/coop | kgolearner B/op, allocs/op | coop B/op, allocs/op |')
    print('|---|---:|---:|---:|---:|---:|---:|')
    for name in fin:
        if 'kgolearner' not in name: continue
        co=name.replace('kgolearner','cooperative-sticky')
        m=re.search(r'event=([^/]+)',name)
        b=med(base[name]['cpu-ns/op']); a=med(fin[name]['cpu-ns/op']); c=med(fin[co]['cpu-ns/op'])
        print(f"| {m.group(1)} | {fmt(b)} | {fmt(a)} | {fmt(c)} | {a/c:.2f} | {fmt(med(fin[name]['B/op']))}, {fmt(med(fin[name]['allocs/op']))} | {fmt(med(fin[co]['B/op']))}, {fmt(med(fin[co]['allocs/op']))} |")
elif which=='wire':
    base=load(R+'/wire-base.txt'); fin=load(R+'/wire-final.txt')
    print('| benchmark | before cpu-ns/op | after cpu-ns/op | after/before | B/op before, after | allocs/op before, after | n |')
    print('|---|---:|---:|---:|---:|---:|---:|')
    for name in fin:
        b=med(base[name]['cpu-ns/op']) if base[name]['cpu-ns/op'] else med(base[name]['ns/op'])
        a=med(fin[name]['cpu-ns/op']) if fin[name]['cpu-ns/op'] else med(fin[name]['ns/op'])
        print(f"| {name} | {fmt(b)} | {fmt(a)} | {a/b:.2f} | {fmt(med(base[name]['B/op']))}, {fmt(med(fin[name]['B/op']))} | {fmt(med(base[name]['allocs/op']))}, {fmt(med(fin[name]['allocs/op']))} | {len(fin[name]['ns/op'])} |")
