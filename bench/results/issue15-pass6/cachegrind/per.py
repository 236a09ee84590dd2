# per.py cg1k.txt: per-call instructions and misses (the 25-call run less the
# 5-call one, over 20) of base, final and Floor, from cg.sh lines; cost* is
# instructions + 10 x D1 misses + 100 x LL misses.
import sys,collections
d={}
for line in open(sys.argv[1]):
    p=line.split()
    if len(p)<7: continue
    b,ev,size,n,ir,d1,ll=p[0],p[1],p[2],int(p[3]),int(p[4]),int(p[5]),int(p[6])
    d[(b,ev,n)]=(ir,d1,ll)
ns=sorted(set(k[2] for k in d)); lo,hi=ns[0],ns[-1]
print("event | base Ir/call | final Ir/call | final/base Ir | D1 final/base | LL final/base | cost* final/base | final/Floor Ir | final/Floor cost*")
for ev in ['stable','scale-up','scale-down','crash','promote','standbys=1']:
    per={}
    for b in ['base','final','final:floor']:
        if (b,ev,hi) not in d: continue
        a=d[(b,ev,hi)]; c=d[(b,ev,lo)]
        per[b]=[(x-y)/(hi-lo) for x,y in zip(a,c)]
    cost=lambda v: v[0]+10*v[1]+100*v[2]
    B,F,FL=per['base'],per['final'],per['final:floor']
    print(f"{ev} | {B[0]/1e6:.1f}M | {F[0]/1e6:.1f}M | {F[0]/B[0]:.2f} | {F[1]/B[1]:.2f} | {F[2]/B[2] if B[2] else 0:.2f} | {cost(F)/cost(B):.2f} | {F[0]/FL[0]:.2f}x | {cost(F)/cost(FL):.2f}x")
