import sys,statistics as st
out=sys.argv[1]
refs={}
for l in open(f'{out}/refs.txt'):
    tag,t0,t,cpu,b,a=l.split(); refs.setdefault(tag,[]).append((float(b),float(a)))
rows=[]
for l in open(f'{out}/profiles.txt'):
    p=l.split()
    if len(p)<6: continue
    i,cls=p[0],p[1]
    rb=[st.median(x[0] for x in refs.get(f'{i}-{cls}-{w}',[(float('nan'),0)])) for w in ('before','after')]
    ra=[st.median(x[1] for x in refs.get(f'{i}-{cls}-{w}',[(0,float('nan'))])) for w in ('before','after')]
    rows.append((cls,int(i),float(p[4]),float(p[5]),rb,ra))
def pear(x,y):
    mx,my=st.fmean(x),st.fmean(y)
    sxy=sum((a-mx)*(b-my) for a,b in zip(x,y)); sxx=sum((a-mx)**2 for a in x); syy=sum((b-my)**2 for b in y)
    return sxy/(sxx*syy)**.5 if sxx>0 and syy>0 else float('nan')
sp=lambda v:(max(v)-min(v))/st.median(v)*100
for cls in ('cpu-ninth','cpu-threeeighths'):
    R=[r for r in rows if r[0]==cls]
    print(cls)
    for r in R: print('  %2d  mbs1 %6.2f  mbs2 %6.2f   ref block before/after %6.0f %6.0f  alu %6.0f %6.0f'%(r[1],r[2],r[3],r[4][0],r[4][1],r[5][0],r[5][1]))
    ref=[st.fmean(r[4]) for r in R]
    for k,name in ((2,'mbs1'),(3,'mbs2')):
        v=[r[k] for r in R]
        fastest=min(ref); ok=[x for x,f in zip(v,ref) if f<=fastest*1.05]
        print('  %s: spread %.1f %%, r(ref)=%.2f, /ref spread %.1f %%, rounds with ref within 5%% of fastest: %d, spread %.1f %%, median all %.2f, median those %.2f'%(name,sp(v),pear(v,ref),sp([x/f for x,f in zip(v,ref)]),len(ok),sp(ok) if len(ok)>1 else 0,st.median(v),st.median(ok)))
