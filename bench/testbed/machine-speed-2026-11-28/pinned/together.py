import sys,statistics as st
def load(p):
    r=[]
    for l in open(p):
        if l.startswith('#'): continue
        f=l.split(); r.append((float(f[0]),float(f[2]),float(f[3])))
    return r
a,b=load(sys.argv[1]),load(sys.argv[2]); B=float(sys.argv[3]) if len(sys.argv)>3 else 10
def buck(r):
    d={}
    for t,x,y in r: d.setdefault(int(t//B),[]).append((x,y))
    return {k:(st.median(v[0] for v in vs),st.median(v[1] for v in vs)) for k,vs in d.items() if len(vs)>=5}
A,Bb=buck(a),buck(b); keys=sorted(set(A)&set(Bb))
def pear(x,y):
    mx,my=st.fmean(x),st.fmean(y); sxy=sum((p-mx)*(q-my) for p,q in zip(x,y)); sxx=sum((p-mx)**2 for p in x); syy=sum((q-my)**2 for q in y)
    return sxy/(sxx*syy)**.5
for i,name in ((0,'block'),(1,'alu')):
    x=[A[k][i] for k in keys]; y=[Bb[k][i] for k in keys]
    base_x,base_y=sorted(x)[len(x)//4],sorted(y)[len(y)//4]
    sx=[k for k in keys if A[k][i]>base_x*1.08]; sy=[k for k in keys if Bb[k][i]>base_y*1.08]
    both=set(sx)&set(sy)
    print(f'{name}: {len(keys)} buckets of {B:.0f} s; cpu0 median {st.median(x):.1f}, cpu1 {st.median(y):.1f} us; r(cpu0, cpu1) = {pear(x,y):.2f}; '
          f'buckets 8 % over their lower quartile: cpu0 {len(sx)}, cpu1 {len(sy)}, both {len(both)}')
print('per bucket: s, cpu0 block, cpu1 block, cpu0 alu, cpu1 alu')
for k in keys: print(f'  {k*B:5.0f} {A[k][0]:8.1f} {Bb[k][0]:8.1f} {A[k][1]:8.1f} {Bb[k][1]:8.1f}')
